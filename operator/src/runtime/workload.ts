/**
 * The leader's work: owned-object informers, the session watch, the resync and the queue, started
 * and stopped in the one order that is safe.
 *
 * warm (every replica, leader or standby, issue 32): the caches (`caches`: the child
 * informers, read-only) list and watch, then the session watch starts filling the session cache;
 * the queue stays held, so a standby collects the keys to look at and reconciles nothing. A new
 * leader then starts from synced caches instead of listing everything after the Lease changed
 * hands (at 10,000 sessions those LISTs were most of a failover).
 * start (the leader): warm if not done yet, then the controllers that write (`informers`: pools,
 * snapshots, with their own informers), then the queue is released, then the resync's first
 * LIST. The queue is released only once every informer has listed: their initial LISTs already
 * queue the owners of what they find, and a reconcile run then would read the caches still
 * listing as empty (a warm pool Pod claimed before a restart, unseen, got a second, cold Pod).
 * What the caches' initial lists queued is a replay and waits in the queue's low lane behind the
 * watch's new sessions and real changes.
 * stop: close the sources first (no new work), then drain the queue, then send the Events still
 * queued, then stop the informers and caches.
 */
import type { SessionWatch } from '../kube/dot-i-source.js';
import type { Resync } from '../kube/resync.js';
import type { WorkQueue } from '../state/work-queue.js';
import type { Logger } from '../telemetry/log-port.js';
import { errorFields } from '../telemetry/logger.js';

/** Something with a synced start and a stop, like OwnedInformer. */
export interface Startable {
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** What the workload is made of. */
export interface WorkloadParts {
  /** Started by the leader only: they write (pool and snapshot controllers with their informers). */
  readonly informers: readonly Startable[];
  /** Read-only caches, started on every replica (warm standby). */
  readonly caches?: readonly Startable[];
  readonly queue: WorkQueue;
  readonly resync: Resync;
  readonly startWatch: () => Promise<SessionWatch>;
  /** The Event sender, flushed after the queue drained. */
  readonly events?: { flush(timeoutMs: number): Promise<boolean> };
  readonly logger: Logger;
}

/** The leader's work, as one unit the Supervisor starts and stops. */
export class Workload {
  private watch?: SessionWatch;
  private warming?: Promise<void>;
  private started = false;
  private stopped = false;

  constructor(private readonly parts: WorkloadParts) {}

  /** True once every source runs. */
  get isStarted(): boolean {
    return this.started;
  }

  /** Lists and watches what the reconcile reads, reconciling nothing; once (later calls share it). */
  warm(): Promise<void> {
    this.warming ??= this.warmOnce().catch((err: unknown) => {
      this.warming = undefined; // the next call (the leader's start) tries again
      throw err;
    });
    return this.warming;
  }

  private async warmOnce(): Promise<void> {
    const t0 = Date.now();
    await Promise.all((this.parts.caches ?? []).map((c) => c.start()));
    // Every key the initial lists queued is a replay of what exists.
    this.parts.queue.demoteWaiting();
    const watch = await this.parts.startWatch();
    if (this.stopped) return watch.close();
    this.watch = watch;
    this.parts.logger.info('caches warm', { waiting: this.parts.queue.depth, warmMs: Date.now() - t0 });
  }

  /** Starts everything; resolves when the caches are synced and the sources run. */
  async start(): Promise<void> {
    const t0 = Date.now();
    await this.warm();
    await Promise.all(this.parts.informers.map((i) => i.start()));
    this.parts.queue.release();
    // A failed first LIST (the API server went away just now) is no reason to exit: the watch's
    // replay queues every session once it is back, and the periodic resync lists again.
    const queued = await this.parts.resync.runOnce().catch((err: unknown) => {
      this.parts.logger.warn(
        'first resync failed; the watch replay and the next resync cover it',
        errorFields(err),
      );
      return 0;
    });
    this.parts.resync.start();
    this.started = true;
    this.parts.logger.info('controller started', { sessions: queued, startupMs: Date.now() - t0 });
  }

  /** Stops taking work and drains in-flight reconciles; resolves true when all finished in time. */
  async stop(timeoutMs: number): Promise<boolean> {
    this.stopped = true;
    this.watch?.close();
    this.parts.resync.stop();
    const inFlight = this.parts.queue.inFlight;
    const started = Date.now();
    const drained = await this.parts.queue.shutdown(timeoutMs);
    await this.parts.events?.flush(Math.max(timeoutMs - (Date.now() - started), 0));
    await Promise.all([...this.parts.informers, ...(this.parts.caches ?? [])].map((i) => i.stop()));
    this.parts.logger.info('controller stopped', { inFlightAtStop: inFlight, drained });
    return drained;
  }
}
