/** What the controller reports to telemetry; telemetry/metrics.ts implements it. */
import type { ExpiryReason } from './lifecycle.js';

/** spec.shutdownPolicy values. */
export type ShutdownPolicy = 'Delete' | 'Retain' | 'Suspend';

/** Reconcile observations that feed metrics. */
export interface ReconcileObserver {
  /**
   * The session's Ready reason after this reconcile (undefined: the session is gone), and since
   * when its Ready condition has had its status (lastTransitionTime).
   */
  readyReason(key: string, reason: string | undefined, since?: Date): void;
  /**
   * A status write went through; `reason` is the Ready reason it wrote (a fixed set). Progress-only
   * writes (Creating, PodPending) are what a burst holds back (status-deferral.ts).
   */
  statusWritten(reason: string | undefined): void;
  /** The session became Ready for the first time, `seconds` after it was created. */
  firstReady(seconds: number): void;
  /**
   * The session was collected (or, with shutdownPolicy Suspend and an idle deadline, suspended),
   * `secondsPastDeadline` after its deadline (expiresAt).
   */
  collected(reason: ExpiryReason, policy: ShutdownPolicy, secondsPastDeadline: number): void;
}
