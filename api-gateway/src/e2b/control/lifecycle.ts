/**
 * E2B's sandbox timeout in session terms. Pure.
 *
 * E2B: a sandbox is killed (or, with `autoPause` / `onTimeout: 'pause'`, paused) `timeout`
 * seconds after its creation or after the last setTimeout/connect, whether used or not. A session
 * here has a lifetime from its creation (maxLifetimeSeconds) and an idle timeout from its last
 * activity (idleTimeoutSeconds; shutdownPolicy Suspend suspends instead of deleting):
 *
 * - kill: maxLifetimeSeconds = the session's age + timeout (at least 60, the CRD's minimum), and
 *   idleTimeoutSeconds = timeout (at most the gateway's maximum), so the idle timeout never ends
 *   the sandbox before its TTL (each setTimeout also stamps the activity annotation);
 * - pause: shutdownPolicy Suspend on a persistent workspace, idleTimeoutSeconds = timeout, and the
 *   gateway's maximum lifetime: the session suspends after `timeout` seconds without calls (idle,
 *   not since the last setTimeout: docs/e2b.md lists the difference) and is resumed by the next.
 */
import { ANNOTATIONS, type SandboxSession } from '@sandbox-platform/api';

import type { SessionPolicy } from '../../config.js';
import { ProblemError } from '../../errors.js';

/** The CRD's smallest maxLifetimeSeconds. */
export const MIN_LIFETIME_SECONDS = 60;

/** The lifecycle fields of a session's spec that an E2B timeout sets. */
export interface LifecycleFields {
  idleTimeoutSeconds: number;
  maxLifetimeSeconds: number;
}

/** What happens at the timeout. */
export type OnTimeout = 'kill' | 'pause';

function checkTimeout(timeoutSeconds: number, policy: SessionPolicy): void {
  if (!Number.isInteger(timeoutSeconds) || timeoutSeconds < 1) {
    throw new ProblemError('invalid-request', 'timeout must be a whole number of seconds, at least 1');
  }
  if (timeoutSeconds > policy.maxLifetimeSeconds) {
    throw new ProblemError(
      'invalid-request',
      `timeout ${timeoutSeconds} s exceeds the maximum sandbox lifetime of ${policy.maxLifetimeSeconds} s`,
    );
  }
}

/** The lifecycle of a new sandbox. */
export function newLifecycle(
  timeoutSeconds: number,
  onTimeout: OnTimeout,
  policy: SessionPolicy,
): LifecycleFields {
  checkTimeout(timeoutSeconds, policy);
  const idleTimeoutSeconds = Math.min(timeoutSeconds, policy.maxIdleTimeoutSeconds);
  if (onTimeout === 'pause') return { idleTimeoutSeconds, maxLifetimeSeconds: policy.maxLifetimeSeconds };
  return { idleTimeoutSeconds, maxLifetimeSeconds: Math.max(MIN_LIFETIME_SECONDS, timeoutSeconds) };
}

/** A time of the API object (the generated types allow a Date), in ms; NaN when absent. */
export function timeMs(v: string | Date | undefined): number {
  if (v instanceof Date) return v.getTime();
  return v === undefined ? Number.NaN : Date.parse(v);
}

/** Seconds since the session was created (0 when unknown). */
export function ageSeconds(s: SandboxSession, now: number): number {
  const created = timeMs(s.metadata.creationTimestamp);
  return Number.isFinite(created) ? Math.max(0, Math.ceil((now - created) / 1000)) : 0;
}

/** What the sandbox does at its timeout. */
export function onTimeoutOf(s: SandboxSession): OnTimeout {
  return s.spec.shutdownPolicy === 'Suspend' ? 'pause' : 'kill';
}

/** The lifecycle after setTimeout(timeout) at `now`: the sandbox ends `timeout` seconds from now. */
export function retimed(
  s: SandboxSession,
  timeoutSeconds: number,
  now: number,
  policy: SessionPolicy,
): LifecycleFields {
  checkTimeout(timeoutSeconds, policy);
  const idleTimeoutSeconds = Math.min(timeoutSeconds, policy.maxIdleTimeoutSeconds);
  if (onTimeoutOf(s) === 'pause') {
    return { idleTimeoutSeconds, maxLifetimeSeconds: s.spec.maxLifetimeSeconds ?? policy.maxLifetimeSeconds };
  }
  const lifetime = Math.max(MIN_LIFETIME_SECONDS, ageSeconds(s, now) + timeoutSeconds);
  if (lifetime > policy.maxLifetimeSeconds) {
    throw new ProblemError(
      'invalid-request',
      `the sandbox would live ${lifetime} s in all; the maximum lifetime is ${policy.maxLifetimeSeconds} s`,
    );
  }
  return { idleTimeoutSeconds, maxLifetimeSeconds: lifetime };
}

/**
 * When the sandbox ends (or pauses): the operator's expiresAt, else the earlier of creation +
 * lifetime and last activity + idle timeout (as the operator computes it).
 */
export function endAt(s: SandboxSession, now: number): Date {
  const expires = timeMs(s.status?.expiresAt);
  // The operator's expiry holds for the spec it last saw: after a setTimeout (a spec change) and
  // before the operator's next status, the spec says when the sandbox ends.
  if (Number.isFinite(expires) && !statusBehindSpec(s)) return new Date(expires);
  const created = timeMs(s.metadata.creationTimestamp);
  const base = Number.isFinite(created) ? created : now;
  const lifetimeEnd = base + (s.spec.maxLifetimeSeconds ?? 0) * 1000;
  const active = timeMs(s.metadata.annotations?.[ANNOTATIONS.lastActivity]);
  const idle = s.spec.idleTimeoutSeconds;
  if (!Number.isFinite(active) || idle === undefined) return new Date(lifetimeEnd);
  return new Date(Math.min(lifetimeEnd, active + idle * 1000));
}

/** True when the status was written for an older spec than the current one. */
function statusBehindSpec(s: SandboxSession): boolean {
  const observed = s.status?.observedGeneration;
  const generation = s.metadata.generation;
  return observed !== undefined && generation !== undefined && observed < generation;
}

/**
 * connect's timeout only ever extends (E2B: "TTL is only extended"): the fields to patch, or
 * undefined when the sandbox already lives at least that long.
 */
export function extended(
  s: SandboxSession,
  timeoutSeconds: number,
  now: number,
  policy: SessionPolicy,
): LifecycleFields | undefined {
  if (onTimeoutOf(s) === 'kill' && endAt(s, now).getTime() >= now + timeoutSeconds * 1000) return undefined;
  if (onTimeoutOf(s) === 'pause' && (s.spec.idleTimeoutSeconds ?? 0) >= timeoutSeconds) return undefined;
  return retimed(s, timeoutSeconds, now, policy);
}
