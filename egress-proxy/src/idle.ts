/**
 * Idle timeouts of upstream requests on one shared timer instead of a timer per request: each
 * in-flight request is an entry whose `last` the request's own code moves on every sign of
 * progress (sent, answer headers, each body chunk either way); one interval checks every entry and
 * calls `onIdle` for those idle `timeoutMs` or longer. A request is thus cut between `timeoutMs`
 * and `timeoutMs` + one tick (at most a quarter of `timeoutMs`, at most 1 s) after it stalled,
 * never before. The interval runs only while entries exist (stopped at a tick that finds none),
 * and never holds the process open.
 */
import { performance } from 'node:perf_hooks';

/** One request watched for idleness. */
export interface IdleEntry {
  /** When it last made progress (performance.now() ms); set by `touch`. */
  last: number;
  readonly onIdle: () => void;
}

/** The shared idle timer of a set of requests. */
export class IdleTimeouts {
  private readonly entries = new Set<IdleEntry>();
  private timer: NodeJS.Timeout | undefined;
  readonly tickMs: number;

  constructor(
    readonly timeoutMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.tickMs = Math.max(1, Math.min(1000, Math.floor(timeoutMs / 4)));
  }

  /** Starts watching a request; `onIdle` is called at most once, after which it is no longer watched. */
  add(onIdle: () => void): IdleEntry {
    const entry: IdleEntry = { last: this.now(), onIdle };
    this.entries.add(entry);
    if (this.timer === undefined) {
      this.timer = setInterval(() => this.tick(), this.tickMs);
      this.timer.unref();
    }
    return entry;
  }

  /** The request made progress now. */
  touch(entry: IdleEntry): void {
    entry.last = this.now();
  }

  /** Stops watching a request (it ended). */
  delete(entry: IdleEntry): void {
    this.entries.delete(entry);
  }

  /** Requests watched now. */
  get size(): number {
    return this.entries.size;
  }

  /** Calls onIdle of every entry idle for timeoutMs or more; stops the interval when none is left. */
  tick(): void {
    if (this.entries.size === 0) {
      clearInterval(this.timer);
      this.timer = undefined;
      return;
    }
    const now = this.now();
    for (const e of this.entries) {
      if (now - e.last >= this.timeoutMs) {
        this.entries.delete(e);
        e.onIdle();
      }
    }
  }
}
