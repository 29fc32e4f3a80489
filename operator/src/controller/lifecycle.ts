/**
 * Idle and lifetime math: pure functions of the session's timestamps and the current time (the
 * clock is an input). The reconcile requeues the session exactly at the earliest deadline; the
 * periodic resync is only a safety net.
 *
 *   idle deadline     = max(lastActivity, readyTime ?? creation, lastResumeTime) + idleTimeoutSeconds
 *                       (none while the session is suspended: nothing can be active then)
 *   lifetime deadline = creation + maxLifetimeSeconds
 *   expiresAt         = the earlier of the two (undefined when neither applies)
 *
 * `max(...)` rather than "lastActivity, else readyTime, else creation": an activity stamp older
 * than the ready time (a gateway clock behind ours, or a stamp written while the Pod was still
 * starting) must not shorten the session's first idle period.
 */
import { ANNOTATIONS, REASONS, type SandboxSession } from '@sandbox-platform/api';

import { parseTime } from './time.js';

/** Default of spec.idleTimeoutSeconds when the API server did not apply the CRD default. */
export const DEFAULT_IDLE_TIMEOUT_SECONDS = 1800;

/** Why a session is collected. */
export type ExpiryReason = typeof REASONS.idleTimeout | typeof REASONS.lifetimeExceeded;

/** The timestamps and limits the deadlines derive from. */
export interface LifecycleInputs {
  readonly createdAt: Date;
  readonly readyTime?: Date;
  readonly lastActivity?: Date;
  /** When the session was last resumed (suspension.ts): its idle period starts again then. */
  readonly resumedAt?: Date;
  /** spec.suspend: a suspended session has no idle deadline (its lifetime still runs). */
  readonly suspended?: boolean;
  /** 0 disables idle collection. */
  readonly idleTimeoutSeconds: number;
  /** Absent: no lifetime limit. */
  readonly maxLifetimeSeconds?: number;
}

/** Deadlines of a session and which one comes first. */
export interface Deadlines {
  readonly idle?: Date;
  readonly lifetime?: Date;
  /** The earlier deadline; undefined when neither applies. */
  readonly expiresAt?: Date;
  /** The reason that applies at expiresAt (lifetime wins a tie: it cannot be postponed). */
  readonly reason?: ExpiryReason;
}

/** What the lifecycle phase should do now. */
export type LifecycleDecision =
  | { readonly expired: false; readonly expiresAt?: Date; readonly requeueAfterMs?: number }
  | { readonly expired: true; readonly expiresAt: Date; readonly reason: ExpiryReason };

/** The idle deadline, or undefined when idle collection is disabled. */
export function idleDeadline(inputs: LifecycleInputs): Date | undefined {
  if (inputs.idleTimeoutSeconds <= 0 || inputs.suspended) return undefined;
  const started = inputs.readyTime ?? inputs.createdAt;
  const base = inputs.resumedAt && inputs.resumedAt > started ? inputs.resumedAt : started;
  const last = inputs.lastActivity && inputs.lastActivity > base ? inputs.lastActivity : base;
  return new Date(last.getTime() + inputs.idleTimeoutSeconds * 1000);
}

/** The lifetime deadline, or undefined without a lifetime limit. */
export function lifetimeDeadline(inputs: LifecycleInputs): Date | undefined {
  if (inputs.maxLifetimeSeconds === undefined) return undefined;
  return new Date(inputs.createdAt.getTime() + inputs.maxLifetimeSeconds * 1000);
}

/** Both deadlines and the earliest one. */
export function deadlines(inputs: LifecycleInputs): Deadlines {
  const idle = idleDeadline(inputs);
  const lifetime = lifetimeDeadline(inputs);
  if (lifetime && (!idle || lifetime <= idle)) {
    return { idle, lifetime, expiresAt: lifetime, reason: REASONS.lifetimeExceeded };
  }
  if (idle) return { idle, lifetime, expiresAt: idle, reason: REASONS.idleTimeout };
  return { idle, lifetime };
}

/** Milliseconds from now until the deadline (negative once it has passed). */
export function timeLeft(now: Date, deadline: Date): number {
  return deadline.getTime() - now.getTime();
}

/**
 * Whether the session has expired at `now`, and if not, when to look again: exactly at the
 * earliest deadline, but never sooner than `floorMs` (so rounding cannot spin the queue).
 */
export function decide(now: Date, inputs: LifecycleInputs, floorMs: number): LifecycleDecision {
  const d = deadlines(inputs);
  if (!d.expiresAt || !d.reason) return { expired: false };
  const left = timeLeft(now, d.expiresAt);
  if (left <= 0) return { expired: true, expiresAt: d.expiresAt, reason: d.reason };
  return { expired: false, expiresAt: d.expiresAt, requeueAfterMs: Math.max(left, floorMs) };
}

/**
 * Reads the lifecycle inputs of a session. `readyTime` and `resumedAt` are passed in because the
 * reconcile may have just observed the Pod becoming Ready or the session being resumed (status is
 * not written yet).
 */
export function lifecycleInputs(
  session: SandboxSession,
  readyTime: Date | undefined,
  resumedAt?: Date,
): LifecycleInputs {
  const createdAt = parseTime(session.metadata.creationTimestamp);
  if (!createdAt) throw new Error('session has no creationTimestamp');
  return {
    createdAt,
    readyTime,
    lastActivity: lastActivity(session),
    resumedAt,
    suspended: session.spec.suspend === true,
    idleTimeoutSeconds: session.spec.idleTimeoutSeconds ?? DEFAULT_IDLE_TIMEOUT_SECONDS,
    maxLifetimeSeconds: session.spec.maxLifetimeSeconds,
  };
}

/** The gateway's activity stamp, when present and well formed. */
export function lastActivity(session: SandboxSession): Date | undefined {
  return parseTime(session.metadata.annotations?.[ANNOTATIONS.lastActivity]);
}
