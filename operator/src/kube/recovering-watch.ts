/**
 * A watch that survives the loss of the API server: the SandboxSession source's replacement for
 * dot-i's watchResource, which ends the process on any watch error (kube/dot-i-source.ts).
 *
 * Every stream is opened without a resourceVersion, as dot-i opens it: the API server first sends
 * every existing object as ADDED, then the changes. A new stream is therefore also a complete
 * re-list, and nothing has to be remembered between streams (resuming from the last version
 * seen is not safe: the replay's versions are not in order, so a stream cut during the replay
 * would skip the objects not replayed yet). Deletions in the gap are not reported; the resync
 * LIST finds them (kube/resync.ts), as it always did for dot-i's own re-watches.
 *
 * How a stream ends decides what comes next:
 * - it closed cleanly after delivering something, or after HEALTHY_STREAM_MS (the API server ends
 *   watches after its request timeout): watch again after a short pause, as dot-i does (200 ms);
 * - it failed (connection refused or reset, an HTTP status other than 200, an in-stream ERROR
 *   event such as 410 Gone, a stream closed early without any event): one warn line with the
 *   attempt number, then watch again after an exponential delay with jitter, capped (5 s by
 *   default), so an API server that is down is asked a few times a second at first and then every
 *   few seconds, and one that comes back is seen within the cap. The attempt count resets when a
 *   stream delivers an event or stayed open for HEALTHY_STREAM_MS (a namespace without sessions
 *   gets no events; its stream's clean close after that long is the server's watch timeout).
 *
 * An in-stream ERROR event ends its stream: the watch is aborted and opened again without a
 * resourceVersion, i.e. a re-list (for 410 Gone that is the only way on; dot-i crashed here with
 * an uncaught exception while building the event's metadata from the Status object).
 */
import type { Logger } from '../telemetry/log-port.js';
import { errorFields } from '../telemetry/logger.js';
import { backoffDelay, type BackoffOptions } from '../state/backoff.js';
import type { WatchEventType } from '../state/session-change-filter.js';

/**
 * One watch request, as client-node's `Watch.watch` makes it: calls `onLine` per event and `done`
 * once when the stream ends (an error, or null after a clean close); resolves with the request's
 * abort handle once the API server answered (or the request failed).
 */
export type WatchCall = (
  path: string,
  query: Record<string, string | number | boolean | undefined>,
  onLine: (phase: string, object: unknown) => void,
  done: (err: unknown) => void,
) => Promise<{ abort(): void }>;

/** Watch parameters. */
export interface RecoveringWatchOptions {
  readonly watch: WatchCall;
  /** The watch path, e.g. /apis/sandbox.dev/v1alpha1/namespaces/a/sandboxsessions. */
  readonly path: string;
  /** Every ADDED, MODIFIED and DELETED event, in stream order; throwing is a bug (logged). */
  readonly onEvent: (type: WatchEventType, object: unknown) => void;
  readonly logger: Logger;
  /** Delays between failed attempts. */
  readonly backoff?: BackoffOptions;
  /** Pause before watching again after a clean close. */
  readonly reopenDelayMs?: number;
  readonly random?: () => number;
  readonly now?: () => number;
}

/** Default delays: from 200 ms (dot-i's re-watch pause), doubling, 20% jitter, at most 5 s. */
export const WATCH_BACKOFF: BackoffOptions = { baseMs: 200, maxMs: 5000, jitter: 0.2 };

/**
 * A stream open this long was healthy even without events (a namespace without sessions): its
 * end resets the attempt count, and a clean close of it is the API server's watch timeout.
 */
export const HEALTHY_STREAM_MS = 30_000;

/** One stream's state. */
interface Stream {
  ended: boolean;
  delivered: boolean;
  acceptedAt?: number;
  abort(): void;
}

const EVENT_TYPES: ReadonlySet<string> = new Set(['ADDED', 'MODIFIED', 'DELETED']);

/** The error an in-stream ERROR event becomes (its Status: code 410 for Gone). */
export class WatchStatusError extends Error {
  constructor(
    readonly code: number | undefined,
    readonly reason: string | undefined,
    message: string,
  ) {
    super(message);
    this.name = 'WatchStatusError';
  }
}

/** One stream at a time; a new one after each end, until close(). */
export class RecoveringWatch {
  private closed = false;
  private failures = 0;
  private timer?: NodeJS.Timeout;
  private request?: { abort(): void };
  private connected?: () => void;

  private readonly now: () => number;

  constructor(private readonly opts: RecoveringWatchOptions) {
    this.now = opts.now ?? Date.now;
  }

  /** Opens the first stream; resolves once a stream was accepted (retrying until then) or on close(). */
  start(): Promise<void> {
    const first = new Promise<void>((resolve) => (this.connected = resolve));
    this.open();
    return first;
  }

  /** Ends the current stream and opens no other. */
  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.request?.abort();
    this.request = undefined;
    this.connected?.();
  }

  private open(): void {
    if (this.closed) return;
    const stream: Stream = { ended: false, delivered: false, abort: () => undefined };
    const end = (err: unknown): void => {
      if (stream.ended) return;
      stream.ended = true;
      stream.abort();
      this.ended(err, stream);
    };
    const onLine = (phase: string, object: unknown): void => {
      if (stream.ended || this.closed) return;
      if (phase === 'ERROR') return end(statusError(object));
      if (!EVENT_TYPES.has(phase)) return; // BOOKMARK (not asked for) and unknown types
      stream.delivered = true;
      this.failures = 0;
      this.deliver(phase as WatchEventType, object);
    };
    this.opts.watch(this.opts.path, {}, onLine, end).then(
      (request) => {
        stream.abort = () => request.abort();
        if (this.closed || stream.ended) return request.abort();
        stream.acceptedAt = this.now();
        this.request = request;
        this.connected?.();
      },
      (err: unknown) => end(err),
    );
  }

  private deliver(type: WatchEventType, object: unknown): void {
    try {
      this.opts.onEvent(type, object);
    } catch (err) {
      this.opts.logger.error('session watch handler failed; event dropped', { type, ...errorFields(err) });
    }
  }

  /** A stream ended: `err` null after a clean close. */
  private ended(err: unknown, stream: Stream): void {
    this.request = undefined;
    if (this.closed) return;
    const healthy =
      stream.delivered ||
      (stream.acceptedAt !== undefined && this.now() - stream.acceptedAt >= HEALTHY_STREAM_MS);
    if (healthy) this.failures = 0;
    let delayMs: number;
    if (err === null && healthy) {
      delayMs = this.opts.reopenDelayMs ?? WATCH_BACKOFF.baseMs;
      this.opts.logger.debug('session watch closed by the server; watching again', { path: this.opts.path });
    } else {
      this.failures++;
      delayMs = backoffDelay(this.failures, this.opts.backoff ?? WATCH_BACKOFF, this.opts.random);
      this.opts.logger.warn('session watch failed; watching again', {
        path: this.opts.path,
        attempt: this.failures,
        retryInMs: delayMs,
        ...(err === null ? { error: 'closed before any event' } : errorFields(err)),
      });
    }
    this.timer = setTimeout(() => this.open(), delayMs);
  }
}

/** The Status object of an in-stream ERROR event, as an error. */
function statusError(object: unknown): WatchStatusError {
  const status = (object ?? {}) as { code?: unknown; reason?: unknown; message?: unknown };
  const code = typeof status.code === 'number' ? status.code : undefined;
  const reason = typeof status.reason === 'string' ? status.reason : undefined;
  const message = typeof status.message === 'string' ? status.message : 'watch ERROR event';
  return new WatchStatusError(code, reason, `ERROR event ${code ?? '?'} ${reason ?? ''}: ${message}`);
}
