/**
 * expireIfDue: collects a session whose idle or lifetime deadline has passed, else asks to be
 * requeued exactly at that deadline.
 *
 *   Delete:  deletes the session (idle or lifetime)
 *   Retain:  writes the collected status, then deletes the Pod and Secret
 *   Suspend: idle -> sets spec.suspend and deletes the Pod (Secret and workspace kept);
 *            lifetime -> deletes the session, as Delete
 *
 * Collecting is guarded against a racing activity stamp: the session is read again, the deadline
 * re-checked on the fresh object, and the commit (the delete for Delete, the status write for
 * Retain, the spec.suspend patch for Suspend) carries that object's resourceVersion as a
 * precondition. If the gateway patched sandbox.dev/last-activity in between, the API server
 * answers 409, and the reconcile runs again on the new stamp instead of collecting a session in
 * use.
 */
import { REASONS } from '@sandbox-platform/api';

import { isConflict } from '../kube/errors.js';
import { removeChildren } from './children-phase.js';
import { decide, lifecycleInputs, type ExpiryReason, type LifecycleDecision } from './lifecycle.js';
import { isPodReady } from './pod-readiness.js';
import { statusInputsOf, type ControllerDeps, type PhaseResult, type Scope } from './scope.js';
import { computeStatus } from './status.js';
import { statusPatch } from './status-patch.js';
import { suspendPod } from './suspend-phase.js';
import { resumeTimeOf } from './suspension.js';
import { parseTime } from './time.js';

/** Collects the session if its deadline passed; otherwise requeues at the deadline. */
export async function expireIfDue(scope: Scope, deps: ControllerDeps): Promise<PhaseResult> {
  const decision = decideFor(scope, deps);
  scope.expiresAt = decision.expiresAt;
  if (!decision.expired) return { requeueAfterMs: decision.requeueAfterMs };
  return collect(scope, deps);
}

/** The deadline the session's status reports now (the claim phase's early status write uses it). */
export function expiresAtOf(scope: Scope, deps: ControllerDeps): Date | undefined {
  return decideFor(scope, deps).expiresAt;
}

function decideFor(scope: Scope, deps: ControllerDeps): LifecycleDecision {
  const stored = parseTime(scope.session.status?.readyTime);
  // The Pod may have become Ready in this very reconcile: its idle period starts now, not at creation.
  const readyNow =
    (scope.secret !== undefined || scope.warmBound === true) &&
    scope.pod !== undefined &&
    isPodReady(scope.pod);
  const readyTime = stored ?? (readyNow ? scope.now : undefined);
  return decide(scope.now, lifecycleInputs(scope.session, readyTime, scope.resumeTime), deps.requeueFloorMs);
}

async function collect(scope: Scope, deps: ControllerDeps): Promise<PhaseResult> {
  const fresh = await deps.sessions.read(scope.key);
  if (!fresh || fresh.metadata.uid !== scope.ref.uid || fresh.metadata.deletionTimestamp) {
    scope.deleted = true;
    return {};
  }
  scope.session = fresh;
  scope.resourceVersion = fresh.metadata.resourceVersion ?? '';
  scope.resumeTime = resumeTimeOf(fresh, scope.now);
  const again = decideFor(scope, deps);
  scope.expiresAt = again.expiresAt;
  if (!again.expired) return { requeueAfterMs: again.requeueAfterMs };
  if (fresh.spec.shutdownPolicy === 'Retain') return retain(scope, deps, again.reason);
  if (fresh.spec.shutdownPolicy === 'Suspend' && again.reason === REASONS.idleTimeout)
    return suspend(scope, deps, again.reason);
  return remove(scope, deps, again.reason);
}

/**
 * shutdownPolicy Suspend, idle: sets spec.suspend on the fresh object's resourceVersion, then
 * deletes the Pod at once (the next reconcile would too; doing it here saves a round trip). The
 * status written after it says Suspended, and the Suspended Event names the idle timeout.
 */
async function suspend(scope: Scope, deps: ControllerDeps, reason: ExpiryReason): Promise<PhaseResult> {
  try {
    const outcome = await deps.sessions.suspend(scope.key, scope.resourceVersion);
    if (outcome === 'gone') {
      scope.deleted = true;
      return {};
    }
    scope.session = outcome;
    scope.resourceVersion = outcome.metadata.resourceVersion ?? '';
  } catch (err) {
    if (isConflict(err)) return { requeueAfterMs: 0 };
    throw new Error('suspend idle session', { cause: err });
  }
  scope.suspendCause = 'idle';
  deps.logger.info('suspended idle session', { ...fields(scope), reason, policy: 'Suspend' });
  deps.observer.collected(reason, 'Suspend', pastDeadline(scope, deps));
  await suspendPod(scope, deps);
  // Suspended: only the lifetime deadline remains.
  const after = decideFor(scope, deps);
  scope.expiresAt = after.expiresAt;
  return { requeueAfterMs: after.expired ? 0 : after.requeueAfterMs };
}

async function remove(scope: Scope, deps: ControllerDeps, reason: ExpiryReason): Promise<PhaseResult> {
  try {
    const outcome = await deps.sessions.delete(scope.key, {
      uid: scope.ref.uid,
      resourceVersion: scope.resourceVersion,
    });
    scope.deleted = true;
    if (outcome === 'gone') return {};
  } catch (err) {
    if (isConflict(err)) return { requeueAfterMs: 0 };
    throw new Error('delete expired session', { cause: err });
  }
  const policy = scope.session.spec.shutdownPolicy === 'Suspend' ? 'Suspend' : 'Delete';
  deps.logger.info('collected session', { ...fields(scope), reason, policy });
  deps.observer.collected(reason, policy, pastDeadline(scope, deps));
  deps.events.record(scope.session, {
    type: 'Normal',
    reason,
    action: 'Delete',
    note: deleteNote(scope, reason),
  });
  return {};
}

async function retain(scope: Scope, deps: ControllerDeps, reason: ExpiryReason): Promise<PhaseResult> {
  const status = computeStatus(statusInputsOf(scope, { kind: 'collected', reason }));
  try {
    const outcome = await deps.sessions.patchStatus(
      scope.key,
      statusPatch(scope.session.status, status),
      scope.resourceVersion,
    );
    if (outcome === 'gone') {
      scope.deleted = true;
      return {};
    }
    scope.resourceVersion = outcome.resourceVersion;
  } catch (err) {
    if (isConflict(err)) return { requeueAfterMs: 0 };
    throw new Error('write collected status', { cause: err });
  }
  scope.collected = reason;
  scope.writtenStatus = status;
  deps.logger.info('collected session', { ...fields(scope), reason, policy: 'Retain' });
  deps.observer.collected(reason, 'Retain', pastDeadline(scope, deps));
  return removeChildren(scope, deps);
}

function deleteNote(scope: Scope, reason: ExpiryReason): string {
  const spec = scope.session.spec;
  const policy = spec.shutdownPolicy ?? 'Delete';
  return reason === REASONS.idleTimeout
    ? `No activity for ${spec.idleTimeoutSeconds ?? ''}s; deleting the session (shutdownPolicy ${policy})`
    : `Maximum lifetime of ${spec.maxLifetimeSeconds ?? ''}s reached; deleting the session (shutdownPolicy ${policy})`;
}

/** Seconds from the deadline that passed to now (how late the collection came). */
function pastDeadline(scope: Scope, deps: ControllerDeps): number {
  const deadline = scope.expiresAt?.getTime();
  return deadline === undefined ? 0 : Math.max(0, (deps.clock.now().getTime() - deadline) / 1000);
}

function fields(scope: Scope): Record<string, string> {
  return { namespace: scope.ref.namespace, session: scope.ref.name };
}
