/**
 * Relays messages between two open WebSockets (the caller's and the sandbox's: the agent's
 * terminal, or a server on a port of the Pod) with bounded buffers both ways: once more than
 * `maxBufferedBytes` sent to one side wait for that side's socket, reading from the other side
 * pauses (TCP then slows the sender) until they drained. Messages keep their kind (binary or text);
 * a `checkText` hook may refuse a text message (the connection is then closed with 1008 and the
 * reason). Either side closing closes the other with the same code and reason (codes that cannot
 * be sent on the wire become 1000 or 1011).
 */
import type WebSocket from 'ws';

/** Options of a bridge. */
export interface BridgeOptions {
  /** Bytes sent to one side and not yet written to its socket before the other side is paused. */
  maxBufferedBytes: number;
  /** Checks a text message from the client; returns a reason to refuse it, or undefined. */
  checkClientText?: (text: string) => string | undefined;
  /** Checks a text message from the upstream; returns a reason to refuse it, or undefined. */
  checkUpstreamText?: (text: string) => string | undefined;
  /** Called once when both sides are closed, with who closed first and the code. */
  onEnd?: (end: { by: 'client' | 'upstream'; code: number }) => void;
}

/** Close codes that may not be sent in a close frame (RFC 6455 7.4.1) and what is sent instead. */
function sendableCode(code: number): number {
  if (code === 1005) return 1000;
  if (code === 1006 || code === 1015 || code < 1000 || code >= 5000) return 1011;
  return code;
}

/** A reason as a close frame carries it: at most 123 bytes of UTF-8. */
function shortReason(reason: string): string {
  const bytes = Buffer.from(reason);
  return bytes.length <= 123
    ? reason
    : bytes
        .subarray(0, 120)
        .toString('utf8')
        .replace(/\uFFFD$/, '');
}

/** Joins two open sockets; returns a function that closes both (e.g. at shutdown). */
export function bridgeSockets(client: WebSocket, upstream: WebSocket, opts: BridgeOptions): () => void {
  let ended = false;
  const end = (by: 'client' | 'upstream', code: number, reason: string): void => {
    const other = by === 'client' ? upstream : client;
    if (other.readyState === other.OPEN || other.readyState === other.CONNECTING) {
      other.close(sendableCode(code), shortReason(reason));
    }
    if (!ended) {
      ended = true;
      opts.onEnd?.({ by, code });
    }
  };
  relay(client, upstream, opts.maxBufferedBytes, opts.checkClientText);
  relay(upstream, client, opts.maxBufferedBytes, opts.checkUpstreamText);
  client.on('close', (code, reason) => end('client', code, reason.toString()));
  upstream.on('close', (code, reason) => end('upstream', code, reason.toString()));
  // An error is followed by 'close' (ws): the listener only keeps it from being thrown.
  client.on('error', () => undefined);
  upstream.on('error', () => undefined);
  return () => {
    for (const s of [client, upstream]) if (s.readyState === s.OPEN) s.close(1001, 'gateway shutting down');
  };
}

/** Messages from `from` to `to`, pausing `from` while `to` holds too much. */
function relay(
  from: WebSocket,
  to: WebSocket,
  maxBufferedBytes: number,
  check: ((text: string) => string | undefined) | undefined,
): void {
  let pending = 0;
  from.on('message', (data: Buffer, isBinary: boolean) => {
    if (to.readyState !== to.OPEN) return;
    if (!isBinary && check) {
      const refused = check(data.toString('utf8'));
      if (refused !== undefined) {
        from.close(1008, shortReason(refused));
        to.close(1008, shortReason(refused));
        return;
      }
    }
    pending += data.length;
    if (pending > maxBufferedBytes && !from.isPaused) from.pause();
    to.send(data, { binary: isBinary }, () => {
      pending -= data.length;
      if (pending <= maxBufferedBytes / 2 && from.isPaused) from.resume();
    });
  });
}
