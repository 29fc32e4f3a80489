/**
 * Verified resume of persistent workspaces (docs/snapshots.md, "Verified resume").
 *
 * - digestBeforeSuspend (called by suspendPod before it deletes the Pod of a suspended session):
 *   asks the agent for the workspace digest after it stopped background processes, terminals and
 *   kernels, and records it in status.workspaceDigest with the claim's and the Pod's UIDs; the Pod
 *   is deleted by the reconcile after the one that wrote the record. The
 *   Pod waits for it at most DIGEST_WAIT_MS; an agent that does not answer records an empty
 *   digest (the resume then reports ResumeUnverified rather than compare with an older one).
 * - verifyResumedWorkspace (the live session's phase after ensureRestored): once the new Pod on
 *   the same claim is Ready, the agent hashes the workspace again and WorkspaceVerified says
 *   ResumeVerified (True), ResumeDigestMismatch (False, with a Warning Event) or ResumeUnverified
 *   (Unknown). Ready waits for the comparison (the condition is final when Ready turns True), not
 *   for its outcome: the files are the tenant's own, and the caller decides what a change means.
 *
 * Both need snapshots turned on (an object store configured, RestoreRunner.configured): only then
 * does the chart let the operator reach the agent port (sandbox-ingress-archive-from-operator).
 * Without it a suspension would wait DIGEST_WAIT_MS for an answer that cannot come.
 *
 * A running command of the session's shell is not stopped before the digest: what it writes in
 * the seconds before the Pod goes is reported as a change at the resume.
 */
import { WORKSPACE_EVENT_REASONS, WORKSPACE_REASONS, workspaceClaimName } from '@sandbox-platform/api';

import { classifyChild } from '../controller/ownership.js';

import { podReadiness } from '../controller/pod-readiness.js';
import type { ControllerDeps, PhaseResult, Scope } from '../controller/scope.js';
import type { PodView } from '../state/views.js';
import { hasPersistentWorkspace } from '../resources/workspace-claim.js';
import type { RestoreRunner } from './restore-runner.js';
import type { WorkspaceVerdict } from './workspace-verdict.js';

/** Longest a suspension waits for the digest before the Pod goes without one. */
export const DIGEST_WAIT_MS = 60_000;
/** How soon to look again while a digest runs. */
const POLL_MS = 1000;

/**
 * Before the Pod of a suspended persistent session is deleted: undefined when it may go now (its
 * digest is recorded, or none can be taken), else when to look again.
 */
export function digestBeforeSuspend(
  scope: Scope,
  deps: ControllerDeps,
  pod: PodView,
): PhaseResult | undefined {
  const runner = deps.restores;
  if (!runner?.configured || !hasPersistentWorkspace(scope.session)) return undefined;
  if (scope.session.status?.workspaceDigest?.podUID === pod.metadata.uid) return undefined;
  return takeDigest(scope, deps, runner, pod);
}

function takeDigest(scope: Scope, deps: ControllerDeps, runner: RestoreRunner, pod: PodView): PhaseResult {
  const podUID = pod.metadata.uid;
  const claimUID = ownClaim(scope, deps)?.metadata.uid ?? scope.session.status?.workspaceDigest?.claimUID;
  // The record is written (this reconcile's status) before the Pod goes (the next reconcile, which
  // finds it recorded): a Pod deleted first and a status write that then failed would leave an
  // older Pod's digest to compare with.
  const record = (digest: string): PhaseResult => {
    scope.workspaceVerdict = {
      allowsReady: true,
      digest: { digest, claimUID, podUID, recordedAt: scope.now.toISOString() },
    };
    runner.forgetDigest(scope.session, podUID);
    return { halt: true, requeueAfterMs: 0 };
  };
  if (!pod.podIP || !podReadiness(pod).ready) return record('');
  const task = runner.digestState(scope.session, podUID);
  if (!task) {
    runner.startDigest(scope.session, podUID, pod.podIP, true);
    return { halt: true, requeueAfterMs: POLL_MS };
  }
  if (task.state === 'done') {
    deps.logger.info('workspace digest recorded before suspension', {
      ...where(scope),
      digest: task.result.digest,
      files: task.result.files,
    });
    return record(task.result.digest);
  }
  const waited = scope.now.getTime() - task.startedAt.getTime();
  if (task.state === 'running' && waited < DIGEST_WAIT_MS) return { halt: true, requeueAfterMs: POLL_MS };
  deps.logger.warn('no workspace digest before suspension; suspending without it', {
    ...where(scope),
    why: task.state === 'failed' ? errorText(task.error) : `no answer in ${DIGEST_WAIT_MS} ms`,
  });
  return record('');
}

/**
 * The session's own workspace claim: the scope's, else the cache's. A suspended session's phases
 * run suspendPod before ensureWorkspace puts the claim in the scope, so the digest read it from
 * the scope found none: it was recorded without claimUID and the resume never compared (e2e).
 */
function ownClaim(scope: Scope, deps: ControllerDeps): { metadata: { uid: string } } | undefined {
  if (scope.claim) return scope.claim;
  const cached = deps.claims.cached(scope.ref.namespace, workspaceClaimName(scope.ref.name));
  return cached && classifyChild(cached.metadata, scope.session) === 'owned' ? cached : undefined;
}

function where(scope: Scope): { namespace: string; session: string } {
  return { namespace: scope.ref.namespace, session: scope.ref.name };
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** The live session's phase: compares a resumed workspace with its digest from the suspension. */
export function verifyResumedWorkspace(scope: Scope, deps: ControllerDeps): Promise<PhaseResult> {
  const target = resumedTarget(scope);
  if (!deps.restores?.configured || !target) return Promise.resolve({});
  return Promise.resolve(compare(scope, deps, deps.restores, target));
}

/** The resumed Pod to compare, with the digest recorded at suspension; undefined when nothing to do. */
function resumedTarget(scope: Scope): { podUID: string; podIP: string; digest: string } | undefined {
  const recorded = scope.session.status?.workspaceDigest;
  const pod = scope.pod;
  if (!recorded || !hasPersistentWorkspace(scope.session) || recorded.claimUID !== scope.claim?.metadata.uid)
    return undefined;
  if (!pod?.podIP || !podServes(pod)) return undefined;
  const podUID = pod.metadata.uid;
  if (recorded.podUID === podUID || recorded.checkedPodUID === podUID) return undefined;
  return { podUID, podIP: pod.podIP, digest: recorded.digest ?? '' };
}

function podServes(pod: PodView): boolean {
  return !pod.metadata.deletionTimestamp && podReadiness(pod).ready;
}

function compare(
  scope: Scope,
  deps: ControllerDeps,
  runner: RestoreRunner,
  at: { podUID: string; podIP: string; digest: string },
): PhaseResult {
  const recorded = scope.session.status?.workspaceDigest ?? {};
  const checked = (condition: NonNullable<WorkspaceVerdict['condition']>): PhaseResult => {
    scope.workspaceVerdict = {
      condition,
      allowsReady: true,
      digest: { ...recorded, checkedPodUID: at.podUID },
    };
    runner.forgetDigest(scope.session, at.podUID);
    return {};
  };
  if (at.digest === '')
    return checked({
      status: 'Unknown',
      reason: WORKSPACE_REASONS.resumeUnverified,
      message: 'No digest was taken when the session was suspended; the resumed workspace is not compared',
    });
  const task = runner.digestState(scope.session, at.podUID);
  if (!task || task.state === 'running') {
    if (!task) runner.startDigest(scope.session, at.podUID, at.podIP, false);
    scope.workspaceVerdict = {
      condition: {
        status: 'Unknown',
        reason: WORKSPACE_REASONS.verifying,
        message: 'Comparing the resumed workspace with its digest from the suspension',
      },
      allowsReady: false,
    };
    return {};
  }
  if (task.state === 'failed')
    return checked({
      status: 'Unknown',
      reason: WORKSPACE_REASONS.resumeUnverified,
      message: `The resumed workspace could not be hashed: ${errorText(task.error)}`,
    });
  if (task.result.digest === at.digest)
    return checked({
      status: 'True',
      reason: WORKSPACE_REASONS.resumeVerified,
      message: `The resumed workspace has the digest recorded at suspension (${at.digest})`,
    });
  const message = `The resumed workspace has digest ${task.result.digest}; ${at.digest} was recorded at suspension`;
  deps.events.record(scope.session, {
    type: 'Warning',
    reason: WORKSPACE_EVENT_REASONS.resumeMismatch,
    action: 'Resume',
    note: message,
  });
  deps.logger.warn('resumed workspace differs from its digest at suspension', {
    namespace: scope.ref.namespace,
    session: scope.ref.name,
  });
  return checked({ status: 'False', reason: WORKSPACE_REASONS.resumeDigestMismatch, message });
}
