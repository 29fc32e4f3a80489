/**
 * The reconcile driver. Level-triggered: it ignores what woke it up, re-reads the session by key
 * (from the watch-fed cache; see state/session-cache.ts), runs the phases, then writes the computed
 * status once, only if it changed, onto the resourceVersion it was computed from. A refused write
 * (the read was stale, or the session changed meanwhile) runs the reconcile again at once.
 *
 * In a burst, a status write that only reports progress (Creating, PodPending) waits while other
 * sessions are queued or being reconciled, until the session changes, the queue drains or a bound
 * passes (status-deferral.ts): Secrets and Pods first, and mostly Ready as the only status write.
 *
 *   live session:       claimPooledPod (a warm Pod of a pool, docs/adr/0016; its Secret alongside)
 *                       -> ensureSecret -> ensureWorkspace -> ensurePod -> ensureRestored (a
 *                       workspace from a snapshot, written and verified: snapshot/restore-phase.ts)
 *                       (provisioning; stops at the first halt or error) -> expireIfDue (always runs, so a session stuck in
 *                       provisioning is still collected at its deadline)
 *   suspended session:  suspendPod -> ensureSecret -> ensureWorkspace (the Pod goes first; the
 *                       Secret and workspace stay) -> expireIfDue (the lifetime still runs)
 *   collected (Retain): removeChildren only; the children are never created again
 *   deleting / gone:    nothing; the garbage collector removes the children via ownerReferences
 */
import { REASONS, type SandboxSessionStatus } from '@sandbox-platform/api';

import { isQuotaRefused } from '../kube/errors.js';
import { sessionRef } from '../resources/metadata.js';
import { removeChildren } from './children-phase.js';
import { claimPooledPod } from './claim-phase.js';
import { isNameConflict } from './errors.js';
import { expireIfDue } from './lifecycle-phase.js';
import { ensurePod } from './pod-phase.js';
import { soonest, statusInputsOf, type ControllerDeps, type Phase, type Scope } from './scope.js';
import { ensureSecret, recordCreatedSecret } from './secret-phase.js';
import { suspendPod } from './suspend-phase.js';
import { isSuspended, resumeTimeOf } from './suspension.js';
import { ensureWorkspace } from './workspace-phase.js';
import { ensureRestored } from '../snapshot/restore-phase.js';
import { verifyResumedWorkspace } from '../snapshot/resume-phase.js';
import { keyString, type SessionKey } from './session-key.js';
import { collectedReason, computeStatus, type Outcome } from './status.js';
import { isProgressOnly } from './status-deferral.js';
import { statusEqual } from './status-patch.js';
import { writeStatus } from './status-write.js';
import { parseTime } from './time.js';

/** What the queue should do after a successful reconcile. */
export interface ReconcileResult {
  readonly requeueAfterMs?: number;
}

/** Generic Ready message for unexpected errors: the detail is logged once, by the queue. */
export const RECONCILE_ERROR_MESSAGE = 'Reconciling the session failed; check the operator logs';

interface PhaseRun {
  requeueAfterMs?: number;
  failure?: unknown;
}

/** Reconciles one session. Throws (after writing status) when a phase failed, so the queue backs off. */
export async function reconcile(key: SessionKey, deps: ControllerDeps): Promise<ReconcileResult> {
  const session = await deps.sessions.get(key);
  if (!session) {
    deps.observer.readyReason(keyString(key), undefined);
    deps.statusDeferral.forget(keyString(key));
    return {};
  }
  if (session.metadata.deletionTimestamp) return {};
  const scope: Scope = {
    key,
    ref: sessionRef(session),
    session,
    resourceVersion: session.metadata.resourceVersion ?? '',
    now: deps.clock.now(),
    created: false,
    deleted: false,
  };
  scope.resumeTime = resumeTimeOf(session, scope.now);
  const run = await runAll(scope, deps);
  if (scope.deleted) return {};
  const computed = computeStatus(statusInputsOf(scope, outcomeOf(scope, run.failure)));
  const changed = !statusEqual(scope.writtenStatus ?? scope.session.status, computed);
  if (run.failure === undefined && changed && holdStatus(scope, deps, computed)) {
    // Not polled: a change of its Pod, the queue draining or this deadline brings it back.
    const dueInMs = deps.statusDeferral.dueInMs(keyString(key), scope.now.getTime());
    return { requeueAfterMs: soonest(dueInMs, run.requeueAfterMs) };
  }
  const written = await writeStatus(scope, deps, computed, changed);
  if (run.failure !== undefined) throw asError(run.failure);
  return { requeueAfterMs: written ? run.requeueAfterMs : 0 };
}

async function runAll(scope: Scope, deps: ControllerDeps): Promise<PhaseRun> {
  const collected = collectedReason(scope.session.status);
  if (collected) {
    scope.collected = collected;
    // The deadline that passed stays on record; nothing is computed for a collected session.
    scope.expiresAt = parseTime(scope.session.status?.expiresAt);
    return runPhases([removeChildren], scope, deps);
  }
  const provision = await runPhases(
    isSuspended(scope.session)
      ? [suspendPod, ensureSecret, ensureWorkspace]
      : [claimPooledPod, ensureSecret, ensureWorkspace, ensurePod, ensureRestored, verifyResumedWorkspace],
    scope,
    deps,
  );
  recordCreatedSecret(scope, deps);
  const lifecycle = await runPhases([expireIfDue], scope, deps);
  return {
    requeueAfterMs: soonest(provision.requeueAfterMs, lifecycle.requeueAfterMs),
    failure: provision.failure ?? lifecycle.failure,
  };
}

/** Runs phases in order until one halts or throws; keeps the soonest requeue. */
export async function runPhases(
  phases: readonly Phase[],
  scope: Scope,
  deps: ControllerDeps,
): Promise<PhaseRun> {
  const run: PhaseRun = {};
  for (const phase of phases) {
    try {
      const result = deps.tracePhase
        ? await deps.tracePhase(phase.name, () => phase(scope, deps))
        : await phase(scope, deps);
      run.requeueAfterMs = soonest(run.requeueAfterMs, result.requeueAfterMs);
      if (result.halt) break;
    } catch (err) {
      run.failure = err;
      break;
    }
  }
  return run;
}

function outcomeOf(scope: Scope, failure: unknown): Outcome {
  if (scope.collected) return { kind: 'collected', reason: scope.collected };
  if (failure === undefined) return { kind: 'active' };
  if (isNameConflict(failure))
    return { kind: 'failed', reason: REASONS.nameConflict, message: failure.message };
  if (isQuotaRefused(failure))
    return { kind: 'failed', reason: REASONS.quotaExceeded, message: failure.message };
  return { kind: 'failed', reason: REASONS.reconcileError, message: RECONCILE_ERROR_MESSAGE };
}

/** True when a changed, progress-only status should wait for the burst to pass. */
function holdStatus(scope: Scope, deps: ControllerDeps, computed: SandboxSessionStatus): boolean {
  return deps.statusDeferral.hold(
    keyString(scope.key),
    scope.now.getTime(),
    deps.otherWork() > 0,
    isProgressOnly(computed),
  );
}

function asError(value: unknown): Error {
  return value instanceof Error ? value : new Error(String(value));
}

/** Binds the driver to its dependencies: the queue's handler. */
export function createReconciler(deps: ControllerDeps): (key: SessionKey) => Promise<ReconcileResult> {
  return (key) => reconcile(key, deps);
}
