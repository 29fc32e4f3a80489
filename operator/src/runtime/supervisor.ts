/**
 * Process lifecycle: wait for the leader Lease, run the workload while holding it, and shut down
 * gracefully on SIGTERM.
 *
 * - standby: not reconciling, /readyz OK (a standby that is never ready would block every rolling
 *   update of a 2-replica Deployment); its caches are warm (the workload's warm(): listed and
 *   watching, the queue held), so taking over costs no LIST (issue 32); a candidate campaigns
 *   for the Lease only once warm, so a cold one never keeps a warm one out;
 * - leader: the workload runs; /readyz OK once its caches are synced;
 * - lease lost (renewal failed for renewDeadline): exit 1 at once, without draining: another
 *   replica may already be reconciling, and the kubelet restarts this one as a standby;
 * - SIGTERM/SIGINT: stop taking work, drain in-flight reconciles, release the Lease (so the
 *   standby takes over immediately instead of after leaseDuration), exit 0.
 */
import type { LeaderElector } from '../kube/leader-election.js';
import type { Logger } from '../telemetry/log-port.js';
import { errorFields } from '../telemetry/logger.js';

/** The workload as the supervisor sees it. */
export interface SupervisedWorkload {
  readonly isStarted: boolean;
  /** Fills the caches without reconciling (a standby's); start() waits for it. */
  warm?(): Promise<void>;
  start(): Promise<void>;
  stop(timeoutMs: number): Promise<boolean>;
}

/** Supervisor parameters. */
export interface SupervisorOptions {
  readonly workload: SupervisedWorkload;
  /** Undefined when leader election is off (a single replica). */
  readonly elector?: LeaderElector;
  readonly shutdownTimeoutMs: number;
  readonly logger: Logger;
  readonly onLeader?: (leading: boolean) => void;
  /** Ends the process; injected for tests. */
  readonly exit: (code: number) => void;
}

/** Sequences leadership, work and shutdown. */
export class Supervisor {
  private stopping = false;

  constructor(private readonly opts: SupervisorOptions) {}

  /** Readiness for /readyz. */
  isReady(): boolean {
    if (this.stopping) return false;
    if (this.opts.elector && !this.opts.elector.isLeader) return true;
    return this.opts.workload.isStarted;
  }

  /** Waits for leadership (if elected), then starts the workload. */
  async run(): Promise<void> {
    const elector = this.opts.elector;
    if (elector) {
      // Campaign only once warm: a leader cannot reconcile before its caches have listed, so a
      // cold candidate holding the Lease only keeps a warm standby out. A leader's container
      // restarted after a crash has the same identity and would otherwise take its own Lease back
      // at once and then list everything cold (71 s at 10,000 sessions on this 2-core machine, the
      // standby ready all along); now the standby takes over when the Lease expires, or the
      // restarted one takes it back as soon as it is warm, whichever comes first.
      const warming = Date.now();
      await this.opts.workload
        .warm?.()
        .catch((err: unknown) =>
          this.opts.logger.warn('warming the caches failed; the leader start retries', errorFields(err)),
        );
      if (this.stopping) return;
      this.opts.logger.info('waiting for leader lease', { warmMs: Date.now() - warming });
      if (!(await elector.acquire())) return;
      if (this.stopping) return;
      this.opts.onLeader?.(true);
      void elector.keepRenewing(() => this.leaseLost());
    }
    await this.opts.workload.start();
  }

  /** Graceful shutdown; idempotent. `failure`: exit 1 even when stopping went well (a restart is wanted). */
  async shutdown(signal: string, failure = false): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.opts.logger.info('shutting down', { signal });
    let code = failure ? 1 : 0;
    try {
      await this.opts.workload.stop(this.opts.shutdownTimeoutMs);
    } catch (err) {
      code = 1;
      this.opts.logger.error('stopping the controller failed', errorFields(err));
    }
    try {
      await this.opts.elector?.release();
      this.opts.onLeader?.(false);
    } catch (err) {
      // The Lease then simply expires after leaseDuration; the standby takes over then.
      this.opts.logger.warn('could not release the leader lease', errorFields(err));
    }
    this.opts.exit(code);
  }

  private leaseLost(): void {
    this.opts.onLeader?.(false);
    if (this.stopping) return;
    this.stopping = true;
    this.opts.logger.error('leader lease lost; exiting so that only the new leader reconciles');
    this.opts.exit(1);
  }
}
