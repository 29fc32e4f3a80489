/**
 * The leader's work: owned-object informers, the session watch, the resync and the queue, started
 * and stopped in the one order that is safe.
 *
 * start: informers first (the reconcile reads children from their caches; reconciling before they
 * have listed would try to create every child again), then the resync's initial LIST and the
 * session watch (which replays every session as ADDED; the queue dedupes the two). The queue is
 * created held and released only once every informer has listed: their initial LISTs already
 * queue the owners of what they find, and a reconcile run then would read the caches still
 * listing as empty (a warm pool Pod claimed before a restart, unseen, got a second, cold Pod).
 * stop: close the sources first (no new work), then drain the queue, then send the Events still
 * queued, then stop the informers.
 */
import type { SessionWatch } from '../kube/dot-i-source.js';
import type { Resync } from '../kube/resync.js';
import type { WorkQueue } from '../kube/work-queue.js';
import type { Logger } from '../telemetry/log-port.js';
import { errorFields } from '../telemetry/logger.js';

/** Something with a synced start and a stop, like OwnedInformer. */
export interface Startable {
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** What the workload is made of. */
export interface WorkloadParts {
  readonly informers: readonly Startable[];
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
  private started = false;

  constructor(private readonly parts: WorkloadParts) {}

  /** True once every source runs. */
  get isStarted(): boolean {
    return this.started;
  }

  /** Starts everything; resolves when the caches are synced and the sources run. */
  async start(): Promise<void> {
    const t0 = Date.now();
    await Promise.all(this.parts.informers.map((i) => i.start()));
    this.parts.queue.release();
    // A failed first LIST (the API server went away just now) is no reason to exit: the watch's
    // replay queues every session once it is back, and the periodic resync lists again.
    const firstList = this.parts.resync.runOnce().catch((err: unknown) => {
      this.parts.logger.warn(
        'first resync failed; the watch replay and the next resync cover it',
        errorFields(err),
      );
      return 0;
    });
    const [queued, watch] = await Promise.all([firstList, this.parts.startWatch()]);
    this.watch = watch;
    this.parts.resync.start();
    this.started = true;
    this.parts.logger.info('controller started', { sessions: queued, startupMs: Date.now() - t0 });
  }

  /** Stops taking work and drains in-flight reconciles; resolves true when all finished in time. */
  async stop(timeoutMs: number): Promise<boolean> {
    this.watch?.close();
    this.parts.resync.stop();
    const inFlight = this.parts.queue.inFlight;
    const started = Date.now();
    const drained = await this.parts.queue.shutdown(timeoutMs);
    await this.parts.events?.flush(Math.max(timeoutMs - (Date.now() - started), 0));
    await Promise.all(this.parts.informers.map((i) => i.stop()));
    this.parts.logger.info('controller stopped', { inFlightAtStop: inFlight, drained });
    return drained;
  }
}
