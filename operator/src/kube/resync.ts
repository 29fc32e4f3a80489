/**
 * The periodic full resync: LIST every session (paged) and queue each key, plus every key the
 * operator knows that the LIST no longer shows (a deletion the watch did not report: dot-i
 * re-watches without a resourceVersion). The safety net behind the watches and requeue timers.
 */
import type { SessionStore } from './ports.js';
import { keyString } from '../controller/session-key.js';
import type { Logger } from '../telemetry/log-port.js';
import { errorFields } from '../telemetry/logger.js';

/** Resync parameters. */
export interface ResyncOptions {
  readonly sessions: SessionStore;
  readonly intervalMs: number;
  /** Queues a key. */
  readonly enqueue: (key: string) => void;
  /** Keys the operator currently knows. */
  readonly known: () => readonly string[];
  readonly logger: Logger;
}

/** The resync loop. */
export class Resync {
  private timer?: NodeJS.Timeout;
  private stopped = false;

  constructor(private readonly opts: ResyncOptions) {}

  /** One pass; resolves with the number of keys queued. */
  async runOnce(): Promise<number> {
    const listed = new Set((await this.opts.sessions.listKeys()).map(keyString));
    for (const key of listed) this.opts.enqueue(key);
    let vanished = 0;
    for (const key of this.opts.known()) {
      if (!listed.has(key)) {
        this.opts.enqueue(key);
        vanished++;
      }
    }
    this.opts.logger.debug('resync queued sessions', { listed: listed.size, vanished });
    return listed.size + vanished;
  }

  /** Runs a pass every interval until stop(); a failed pass is logged and the next one still runs. */
  start(): void {
    this.stopped = false;
    this.schedule();
  }

  /** Stops the loop. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.runOnce()
        .catch((err: unknown) =>
          this.opts.logger.warn('resync failed; retrying next period', errorFields(err)),
        )
        .finally(() => this.schedule());
    }, this.opts.intervalMs);
    this.timer.unref();
  }
}
