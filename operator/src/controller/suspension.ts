/**
 * Suspension as pure functions of the session (docs/adr/0015). The desired state is spec.suspend
 * alone: a client sets it (kubectl, the gateway's suspend call), or the operator does when
 * shutdownPolicy Suspend finds the session idle; the gateway clears it on the next call.
 *
 * A resume is seen as spec.suspend=false on a session whose stored Ready reason is still
 * Suspended. From that moment the idle period starts again (status.lastResumeTime), so a session
 * resumed with `kubectl patch` (no activity stamp) is not suspended again at once because its
 * last activity is older than the idle timeout.
 */
import { CONDITIONS, REASONS, type SandboxSession, type SandboxSessionStatus } from '@sandbox-platform/api';

import { parseTime } from './time.js';

/** Why the operator suspended a session in this reconcile (undefined: a client asked). */
export type SuspendCause = 'idle';

/** True when the session should have no Pod. */
export function isSuspended(session: SandboxSession): boolean {
  return session.spec.suspend === true;
}

/** A suspended session's Pod that is still there, and why (Ready says Suspending meanwhile). */
export interface PodLeaving {
  readonly pod: string;
  /** Its workspace digest is being recorded (verified resume), or it is being deleted. */
  readonly why: 'digest' | 'deleting';
}

/** Ready reasons of a suspension: on the way (Suspending, the Pod still there) or done (Suspended). */
export function isSuspendReason(reason: string | undefined): boolean {
  return reason === REASONS.suspended || reason === REASONS.suspending;
}

/** True when the stored status reports the session suspended (or suspending). */
export function reportedSuspended(status: SandboxSessionStatus | undefined): boolean {
  const ready = status?.conditions?.find((c) => c.type === CONDITIONS.ready);
  return isSuspendReason(ready?.reason);
}

/**
 * When the session was last resumed: now when this reconcile sees the resume, else the stored
 * status.lastResumeTime (undefined when it never was).
 */
export function resumeTimeOf(session: SandboxSession, now: Date): Date | undefined {
  if (!isSuspended(session) && reportedSuspended(session.status)) return now;
  return parseTime(session.status?.lastResumeTime);
}
