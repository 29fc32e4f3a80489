/**
 * The liveness check behind `GET /livez` (and `sandbox-agent probe --live`, the pod's liveness
 * probe). /healthz answers "can a command run now" (readiness: false while bash restarts);
 * /livez answers "will this process ever serve again", and fails only when a restart of the
 * container is the one remedy:
 *
 * - the command queue has had work without moving for longer than the longest allowed command
 *   plus the time to stop it and restart bash (a bug, or a kill path that cannot finish);
 * - libuv's I/O threadpool does not complete a trivial stat of the workspace within a few seconds
 *   (every thread blocked, e.g. in open(2) of a FIFO: file calls and the /proc reads of the
 *   timeout kill would all wait behind them, while the event loop itself stays responsive).
 *
 * A blocked event loop fails the probe by not answering at all.
 */
import { stat } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';

import { settlesWithin } from '../shell/timing.js';

/** What the check observes of the command queue. */
export interface QueueProgress {
  /** How long the queue has had work without progress (0 when idle). */
  stalledMs(): number;
}

/** Options of {@link LivenessCheck}. */
export interface LivenessOptions {
  queue: QueueProgress;
  /** Stall beyond which the queue counts as wedged. */
  stallLimitMs: number;
  /** Directory whose stat goes through the threadpool (the workspace). */
  ioProbePath: string;
  /** How long the threadpool may take for that stat. Default 2 s. */
  ioTimeoutMs?: number;
  /** The threadpool operation; injected by tests. Default: stat of ioProbePath. */
  ioProbe?: () => Promise<unknown>;
}

/** The verdict: ok, or the reason the agent should be restarted. */
export type Liveness = { ok: true } | { ok: false; reason: string };

/** Default bound of the threadpool probe; far above a stat's microseconds, below the probe timeout. */
export const IO_PROBE_TIMEOUT_MS = 2000;

/** See the module comment. */
export class LivenessCheck {
  private readonly ioTimeoutMs: number;
  private readonly ioProbe: () => Promise<unknown>;
  /**
   * The stat in flight, if any: at most one is ever queued, so probes of a starved threadpool do
   * not pile up behind the blocked threads.
   */
  private inFlight: { done: Promise<unknown>; since: number } | undefined;

  constructor(private readonly opts: LivenessOptions) {
    this.ioTimeoutMs = opts.ioTimeoutMs ?? IO_PROBE_TIMEOUT_MS;
    this.ioProbe = opts.ioProbe ?? (() => stat(opts.ioProbePath));
  }

  /** Runs the check; never rejects. */
  async check(): Promise<Liveness> {
    const stalled = this.opts.queue.stalledMs();
    if (stalled > this.opts.stallLimitMs) {
      return { ok: false, reason: `the command queue made no progress for ${Math.round(stalled / 1000)} s` };
    }
    return (await this.threadpoolAnswers())
      ? { ok: true }
      : { ok: false, reason: `the I/O threadpool did not answer within ${this.ioTimeoutMs} ms` };
  }

  private async threadpoolAnswers(): Promise<boolean> {
    if (!this.inFlight) {
      const probe = {
        // A failing stat still proves a thread ran it: only completion matters.
        done: this.ioProbe().then(
          () => undefined,
          () => undefined,
        ),
        since: performance.now(),
      };
      void probe.done.then(() => {
        if (this.inFlight === probe) this.inFlight = undefined;
      });
      this.inFlight = probe;
    }
    const left = this.inFlight.since + this.ioTimeoutMs - performance.now();
    return left > 0 && (await settlesWithin(this.inFlight.done, left));
  }
}
