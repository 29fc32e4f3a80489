/**
 * A per-key work queue (the shape of client-go's workqueue), replacing dot-i's one global serial
 * queue:
 *
 * - dedupe: a key waiting in the queue is queued once however often it is added;
 * - per-key serialization: a key is never processed by two workers at once; a key added while it
 *   is being processed is marked dirty and processed once more afterwards (level-triggered: the
 *   re-run sees everything that changed meanwhile);
 * - N workers, FIFO among keys, in two lanes: keys added as `low` (a replay of what is settled:
 *   the resync, a new leader's initial lists, a watch replaying unchanged sessions) wait until no
 *   other key does, so that a change, e.g. a new session, never waits behind thousands of
 *   sessions that only need a look (issue 32); adding a low key normally moves it ahead;
 * - per-key exponential backoff with jitter after a failure, reset by a success;
 * - addAfter keeps the earliest pending wake-up per key (requeue at a deadline);
 * - shutdown stops taking work, drops what is waiting, and waits for in-flight work to finish.
 *
 * The hooks report what client-go's workqueue metrics report (telemetry/work-queue-metrics.ts
 * exports them under the same names): adds, time waiting, time processing, retries, and the age
 * of what is in flight (inFlightStartTimes).
 */
import { backoffDelay, type BackoffOptions } from './backoff.js';

/** What the handler asks for after a success. */
export interface HandlerResult {
  readonly requeueAfterMs?: number;
}

/** Callbacks for telemetry; the queue itself logs nothing. */
export interface QueueHooks {
  /**
   * A key was queued: newly, or while it was being processed (it runs once more afterwards). A key
   * already waiting is not counted again (client-go's `adds`).
   */
  onAdd?(key: string): void;
  /** A worker took the key after it waited `queuedMs` since the add that queued it. */
  onStart?(key: string, queuedMs: number): void;
  /** The handler threw; the key is retried after `delayMs`. The error is to be logged here, once. */
  onError?(key: string, err: unknown, attempt: number, delayMs: number): void;
  /** The handler finished (either way) after `ms`. */
  onDone?(key: string, ms: number, ok: boolean): void;
  /** The number of keys waiting changed. */
  onDepth?(depth: number): void;
}

/** Queue parameters. */
export interface WorkQueueOptions {
  readonly concurrency: number;
  readonly handler: (key: string) => Promise<HandlerResult>;
  readonly backoff: BackoffOptions;
  /**
   * Longest timer the queue sets. Node's setTimeout overflows above 2^31-1 ms (~24.8 days) and
   * then fires at once; a deadline further away is re-checked when this shorter timer fires.
   */
  readonly maxDelayMs?: number;
  readonly hooks?: QueueHooks;
  /**
   * Start held: keys are queued (and deduped) but none is processed until release(). The session
   * queue is created held and released once the caches its reconcile reads have listed
   * (runtime/workload.ts): their initial LISTs already queue keys.
   */
  readonly held?: boolean;
  readonly random?: () => number;
  readonly now?: () => number;
  /**
   * Called when a key finished and nothing is waiting or running any more (a burst is over);
   * may add keys. Wake-ups set by addAfter do not count as waiting.
   */
  readonly onIdle?: () => void;
}

const MAX_TIMER_MS = 2 ** 31 - 1;

interface Timer {
  readonly dueAt: number;
  readonly handle: NodeJS.Timeout;
}

/** The queue. */
export class WorkQueue {
  private readonly pending = new Set<string>();
  /** Waiting keys of the low lane (never also in `pending`). */
  private readonly lowPending = new Set<string>();
  /** Keys being processed, with when their processing started. */
  private readonly running = new Map<string, number>();
  private readonly dirty = new Set<string>();
  /** When each waiting (pending or dirty) key was added: the start of its queue time. */
  private readonly addedAt = new Map<string, number>();
  private readonly timers = new Map<string, Timer>();
  private readonly failures = new Map<string, number>();
  private closed = false;
  private held: boolean;
  private idleWaiters: Array<() => void> = [];
  private readonly now: () => number;
  private readonly maxDelayMs: number;

  constructor(private readonly opts: WorkQueueOptions) {
    if (!Number.isInteger(opts.concurrency) || opts.concurrency < 1)
      throw new Error('concurrency must be >= 1');
    this.now = opts.now ?? Date.now;
    this.held = opts.held ?? false;
    this.maxDelayMs = Math.min(opts.maxDelayMs ?? MAX_TIMER_MS, MAX_TIMER_MS);
  }

  /** Keys waiting to be processed, both lanes (not counting the ones running). */
  get depth(): number {
    return this.pending.size + this.lowPending.size;
  }

  /** Keys being processed right now. */
  get inFlight(): number {
    return this.running.size;
  }

  /** When each in-flight key started processing (ms, the queue's clock). */
  inFlightStartTimes(): IterableIterator<number> {
    return this.running.values();
  }

  /** True once shutdown began. */
  get isShuttingDown(): boolean {
    return this.closed;
  }

  /** Starts processing a queue created held (a no-op otherwise). */
  release(): void {
    this.held = false;
    this.pump();
  }

  /**
   * Queues a key for processing now; `low`: only once no normal key waits (a settled object's
   * replay). A waiting low key added normally moves to the normal lane.
   */
  add(key: string, priority: 'normal' | 'low' = 'normal'): void {
    if (this.closed) return;
    if (this.running.has(key)) {
      if (!this.dirty.has(key)) this.added(key);
      this.dirty.add(key);
      return;
    }
    if (this.pending.has(key)) return;
    if (this.lowPending.has(key)) {
      if (priority === 'low') return;
      this.lowPending.delete(key);
    } else if (!this.addedAt.has(key)) this.added(key);
    (priority === 'low' ? this.lowPending : this.pending).add(key);
    this.opts.hooks?.onDepth?.(this.depth);
    this.pump();
  }

  /**
   * Moves every waiting key to the low lane: what the caches' initial lists queued while the
   * queue was held, once they are known to be replays (the new leader's start).
   */
  demoteWaiting(): void {
    for (const key of this.pending) this.lowPending.add(key);
    this.pending.clear();
  }

  private added(key: string): void {
    this.addedAt.set(key, this.now());
    this.opts.hooks?.onAdd?.(key);
  }

  /** Queues a key after `delayMs`, unless an earlier wake-up for it is already set. */
  addAfter(key: string, delayMs: number): void {
    if (this.closed) return;
    if (delayMs <= 0) {
      this.add(key);
      return;
    }
    const delay = Math.min(delayMs, this.maxDelayMs);
    const dueAt = this.now() + delay;
    const existing = this.timers.get(key);
    if (existing && existing.dueAt <= dueAt) return;
    if (existing) clearTimeout(existing.handle);
    const handle = setTimeout(() => {
      this.timers.delete(key);
      this.add(key);
    }, delay);
    handle.unref?.();
    this.timers.set(key, { dueAt, handle });
  }

  /** Forgets a key's failure count and pending wake-up (the object is gone). */
  forget(key: string): void {
    this.failures.delete(key);
    const timer = this.timers.get(key);
    if (timer) clearTimeout(timer.handle);
    this.timers.delete(key);
  }

  /**
   * Stops taking work and waits up to `timeoutMs` for in-flight work to finish. Resolves true
   * when everything in flight finished, false on timeout.
   */
  async shutdown(timeoutMs: number): Promise<boolean> {
    this.closed = true;
    for (const timer of this.timers.values()) clearTimeout(timer.handle);
    this.timers.clear();
    this.pending.clear();
    this.lowPending.clear();
    this.dirty.clear();
    this.addedAt.clear();
    this.opts.hooks?.onDepth?.(0);
    if (this.running.size === 0) return true;
    let timeout: NodeJS.Timeout | undefined;
    const drained = new Promise<boolean>((resolve) => this.idleWaiters.push(() => resolve(true)));
    const expired = new Promise<boolean>((resolve) => {
      timeout = setTimeout(() => resolve(false), timeoutMs);
    });
    try {
      return await Promise.race([drained, expired]);
    } finally {
      clearTimeout(timeout);
    }
  }

  private pump(): void {
    while (!this.closed && !this.held && this.running.size < this.opts.concurrency && this.depth > 0) {
      const lane = this.pending.size > 0 ? this.pending : this.lowPending;
      const key = lane.values().next().value as string;
      const started = this.now();
      lane.delete(key);
      this.running.set(key, started);
      this.opts.hooks?.onDepth?.(this.depth);
      this.opts.hooks?.onStart?.(key, started - (this.addedAt.get(key) ?? started));
      this.addedAt.delete(key);
      void this.process(key, started);
    }
  }

  private async process(key: string, started: number): Promise<void> {
    let ok = false;
    try {
      const result = await this.opts.handler(key);
      ok = true;
      this.failures.delete(key);
      if (result.requeueAfterMs !== undefined) this.addAfter(key, result.requeueAfterMs);
    } catch (err) {
      const attempt = (this.failures.get(key) ?? 0) + 1;
      this.failures.set(key, attempt);
      const delay = backoffDelay(attempt, this.opts.backoff, this.opts.random);
      this.opts.hooks?.onError?.(key, err, attempt, delay);
      this.addAfter(key, delay);
    } finally {
      this.finish(key, started, ok);
    }
  }

  private finish(key: string, started: number, ok: boolean): void {
    this.running.delete(key);
    this.opts.hooks?.onDone?.(key, this.now() - started, ok);
    if (this.dirty.delete(key)) this.add(key);
    this.pump();
    if (!this.closed && this.running.size === 0 && this.depth === 0) this.opts.onIdle?.();
    if (this.closed && this.running.size === 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const wake of waiters) wake();
    }
  }
}
