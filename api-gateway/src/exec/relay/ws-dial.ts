/**
 * Opens a WebSocket to a sandbox (the agent's terminal, or a server on a port of the Pod) before
 * the caller's own upgrade is answered, so a refusal can still be an HTTP problem. The handshake
 * has a deadline; an answer other than 101 is read (bounded) and handed back with its status, so
 * the caller can map the agent's problem+json.
 */
import type { IncomingMessage } from 'node:http';

import WebSocket from 'ws';

/** The sandbox answered the upgrade with a plain HTTP response. */
export class UpgradeRefusedError extends Error {
  constructor(
    readonly status: number,
    readonly body: Buffer,
  ) {
    super(`the upgrade was answered with HTTP ${status}`);
    this.name = 'UpgradeRefusedError';
  }
}

/** Options of a dial. */
export interface DialOptions {
  headers?: Record<string, string>;
  /** Subprotocols the caller asked for (Sec-WebSocket-Protocol), passed on. */
  protocols?: string[];
  /** Deadline of the TCP connect plus the handshake. */
  timeoutMs: number;
  /** Largest message accepted from the sandbox (bigger: closed with 1009). */
  maxPayload: number;
}

/** Most bytes of a refused upgrade's body that are kept (an agent problem is far smaller). */
const REFUSAL_BODY_BYTES = 64 * 1024;

/** Resolves with the open socket; rejects with UpgradeRefusedError or the transport error. */
export function dialWebSocket(url: string, opts: DialOptions): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, opts.protocols ?? [], {
      headers: opts.headers ?? {},
      handshakeTimeout: opts.timeoutMs,
      maxPayload: opts.maxPayload,
      perMessageDeflate: false,
      followRedirects: false,
    });
    const fail = (err: Error): void => {
      ws.removeAllListeners();
      ws.on('error', () => undefined);
      ws.terminate();
      reject(err);
    };
    ws.once('open', () => {
      ws.removeAllListeners('error');
      ws.removeAllListeners('unexpected-response');
      resolve(ws);
    });
    ws.once('error', fail);
    ws.once('unexpected-response', (_req, res: IncomingMessage) => {
      readBounded(res, REFUSAL_BODY_BYTES).then(
        (body) => fail(new UpgradeRefusedError(res.statusCode ?? 0, body)),
        (err: Error) => fail(err),
      );
    });
  });
}

function readBounded(res: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    res.on('data', (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        res.destroy();
        resolve(Buffer.concat(chunks));
        return;
      }
      chunks.push(c);
    });
    res.once('end', () => resolve(Buffer.concat(chunks)));
    res.once('error', reject);
    res.once('close', () => resolve(Buffer.concat(chunks)));
  });
}
