/**
 * suspendPod: a suspended session has no Pod. Deletes the session's own Pod (ownership checked,
 * UID precondition on the delete) and leaves the Secret and the workspace claim alone, so the
 * token and the files are there when the session resumes. Runs first for a suspended session, so
 * a problem with another child never keeps the Pod running. Used also by the lifecycle phase right
 * after it suspended an idle session, and by the Retain collection (children-phase.ts).
 */
import { podName } from '@sandbox-platform/api';

import { digestBeforeSuspend } from '../snapshot/resume-phase.js';
import { classifyChild } from './ownership.js';
import type { ControllerDeps, PhaseResult, Scope } from './scope.js';

/** Deletes the owned Pod if it still exists and is not being deleted already. */
export async function suspendPod(scope: Scope, deps: ControllerDeps): Promise<PhaseResult> {
  const { namespace, name } = scope.ref;
  // status.podName: a Pod bound from a pool is named after its pool (docs/adr/0016).
  const pod = scope.pod ?? deps.pods.cached(namespace, scope.session.status?.podName ?? podName(name));
  scope.pod = undefined;
  if (!pod || classifyChild(pod.metadata, scope.session) !== 'owned') return {};
  // Ready says Suspending, not Suspended, while the Pod is still there (ADR 0015).
  if (pod.metadata.deletionTimestamp) {
    scope.podLeaving = { pod: pod.metadata.name, why: 'deleting' };
    return {};
  }
  // A persistent workspace's digest is recorded first (verified resume, docs/snapshots.md).
  const wait = scope.collected ? undefined : digestBeforeSuspend(scope, deps, pod);
  if (wait) {
    scope.podLeaving = { pod: pod.metadata.name, why: 'digest' };
    return wait;
  }
  await deps.pods.delete(namespace, pod.metadata.name, pod.metadata.uid);
  scope.podLeaving = { pod: pod.metadata.name, why: 'deleting' };
  deps.logger.info(
    scope.collected ? 'deleted pod of collected session' : 'deleted pod of suspended session',
    {
      namespace,
      session: name,
      pod: pod.metadata.name,
    },
  );
  return {};
}
