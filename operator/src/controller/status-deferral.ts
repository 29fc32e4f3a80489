/**
 * Status writes that can wait during a burst. A session's first statuses (Ready=False with
 * Creating or PodPending) only report progress; each write costs the API server about as much as
 * creating a child (a status patch goes through validation, field management and etcd like any
 * write). In a burst, that is while other sessions are queued or being reconciled and for
 * SETTLE_MS after the last time they were, such a write waits so every session's Secret and Pod
 * come first, and it is usually never made: the session's next status (Ready) replaces it. A held
 * session is not polled: it is reconciled again when its Pod changes (the informers queue it),
 * when the queue has stayed idle for SETTLE_MS (release(), through releaseWhenSettled: the burst
 * is over, so every held write is made then), or once it waited MAX_DEFER_MS, so a steady stream
 * of work cannot starve it. Everything else is written at once: becoming Ready (a gateway may be
 * waiting for it), failures, collection. A session created on a quiet operator gets its progress
 * written at once. Issue 32's bench-scale (docs/benchmarks.md) measured 1.65 status writes per
 * session before, polled every 250 ms; 1.46-1.50 with a 30 s bound and a release as soon as the
 * queue drained (it drains between the creates of a burst, and while the Pods of the last
 * sessions are still pending: each such moment wrote every held session's PodPending).
 *
 * Pure state keyed by session; time comes in as an argument (releaseWhenSettled has the timer).
 */
import { REASONS, type SandboxSessionStatus } from '@sandbox-platform/api';

import { readyCondition } from './status.js';

/**
 * Longest a progress-only status write waits for the burst to pass: longer than a session takes
 * to get Ready in a burst of thousands (bench-scale), so that its progress is never written. At
 * 30 s, 0.46 of the sessions of a burst of 1,000 on this machine (create-to-Ready p50 33 s) wrote
 * their PodPending status before Ready (bench-scale, 2026-12-07); a burst of 10,000 takes minutes.
 */
export const MAX_DEFER_MS = 300_000;

/**
 * How long after the last busy moment a burst still counts as going on, and how long the queue must
 * stay idle before the held writes are made: Pods of a burst become Ready seconds apart while the
 * API server catches up, each waking the operator for a moment.
 */
export const SETTLE_MS = 10_000;

const PROGRESS_REASONS: ReadonlySet<string> = new Set([
  REASONS.creating,
  REASONS.podPending,
  REASONS.workspacePending,
]);

/** True when a computed status only reports provisioning progress (nothing anyone waits for). */
export function isProgressOnly(computed: SandboxSessionStatus): boolean {
  const ready = readyCondition(computed);
  return ready?.status === 'False' && PROGRESS_REASONS.has(ready.reason ?? '');
}

/** Per-session deferral bookkeeping. */
export class StatusDeferral {
  private readonly since = new Map<string, number>();
  /** Sessions released (the queue drained): their next write is made, busy or not. */
  private readonly released = new Set<string>();
  /** The last time a status write was weighed while other sessions were queued (hold(): busy). */
  private lastBusyAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly maxDeferMs = MAX_DEFER_MS,
    private readonly settleMs = SETTLE_MS,
  ) {}

  /**
   * Whether to hold back this write now. `busy`: other sessions are queued or being reconciled;
   * a burst lasts until SETTLE_MS after the last busy moment. The first hold starts the session's
   * clock; a write that is made clears it.
   */
  hold(key: string, nowMs: number, busy: boolean, progressOnly: boolean): boolean {
    if (busy) this.lastBusyAt = nowMs;
    const burst = busy || nowMs - this.lastBusyAt < this.settleMs;
    const first = this.since.get(key);
    const due = first !== undefined && nowMs - first >= this.maxDeferMs;
    const released = this.released.delete(key);
    if (!burst || !progressOnly || due || released) {
      this.since.delete(key);
      return false;
    }
    if (first === undefined) this.since.set(key, nowMs);
    return true;
  }

  /** Milliseconds until a held session's write is due (0 when it is not held). */
  dueInMs(key: string, nowMs: number): number {
    const first = this.since.get(key);
    return first === undefined ? 0 : Math.max(0, first + this.maxDeferMs - nowMs);
  }

  /**
   * The burst is over (the queue drained): returns the held sessions, to be reconciled again,
   * and lets each one's next write through even if other work arrived meanwhile (else each would
   * see the others queued and be held again).
   */
  release(): string[] {
    const keys = [...this.since.keys()];
    for (const key of keys) this.released.add(key);
    return keys;
  }

  /** Forgets a session (deleted, or its write was made elsewhere). */
  forget(key: string): void {
    this.since.delete(key);
    this.released.delete(key);
  }

  /** Sessions currently held (metrics, tests). */
  get size(): number {
    return this.since.size;
  }
}

/**
 * The queue's onIdle hook: once the queue has stayed idle for `settleMs` (every idle moment
 * restarts the wait; `isIdle` is asked again when it ends), `release` runs: the burst is over.
 */
export function releaseWhenSettled(
  isIdle: () => boolean,
  release: () => void,
  settleMs = SETTLE_MS,
): () => void {
  let timer: NodeJS.Timeout | undefined;
  return () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      if (isIdle()) release();
    }, settleMs);
    timer.unref();
  };
}
