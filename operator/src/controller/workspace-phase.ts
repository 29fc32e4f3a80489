/**
 * ensureWorkspace: a session with spec.workspace.persistentVolumeClaim has its claim
 * `sbs-<name>-workspace`, owned by it (never a foreign claim of that name: NameConflict, as for the
 * Pod and Secret; never an earlier session's, which is being garbage-collected with its data).
 * Runs after ensureSecret and before ensurePod. An unbound claim does not stop the Pod: with a
 * WaitForFirstConsumer class the claim is provisioned only once its Pod is scheduled. What an
 * unbound claim means for Ready is judged by workspace-state.ts, except while the session is
 * suspended (no consumer, so nothing would bind it).
 */
import { EVENT_REASONS, workspaceClaimName } from '@sandbox-platform/api';

import { isAlreadyExists, isQuotaRefused } from '../kube/errors.js';
import type { ClaimView } from '../state/views.js';
import { buildWorkspaceClaim, hasPersistentWorkspace } from '../resources/workspace-claim.js';
import { NameConflictError } from './errors.js';
import { classifyChild } from './ownership.js';
import type { ControllerDeps, PhaseResult, Scope } from './scope.js';
import { isSuspended } from './suspension.js';
import { judgeUnboundClaim } from './workspace-state.js';

/** Ensures the workspace claim; halts provisioning while an old claim of that name goes away. */
export async function ensureWorkspace(scope: Scope, deps: ControllerDeps): Promise<PhaseResult> {
  if (!hasPersistentWorkspace(scope.session)) return {};
  const { namespace, name } = scope.ref;
  const childName = workspaceClaimName(name);
  const existing = deps.claims.cached(namespace, childName) ?? (await createClaim(scope, deps, childName));
  switch (classifyChild(existing.metadata, scope.session)) {
    case 'owned':
      if (existing.metadata.deletionTimestamp) {
        // Deleted from outside: the kubelet keeps it while the Pod uses it, then it goes with its
        // data; a new, empty one is created then.
        return wait(
          scope,
          deps,
          `PersistentVolumeClaim ${childName} is being deleted; it will be created again`,
        );
      }
      scope.claim = existing;
      if (existing.phase === 'Bound' || isSuspended(scope.session)) return {};
      scope.workspace = judgeUnboundClaim({
        session: name,
        claim: existing,
        now: scope.now,
        resumedAt: scope.resumeTime,
        classExists: existing.storageClassName
          ? await deps.storageClasses.exists(existing.storageClassName)
          : undefined,
        bindTimeoutMs: deps.workspaceBindTimeoutMs,
        waitRequeueMs: deps.waitRequeueMs,
      });
      return { requeueAfterMs: scope.workspace.requeueAfterMs };
    case 'previous':
      return wait(
        scope,
        deps,
        `Waiting for PersistentVolumeClaim ${childName} of a previous SandboxSession named ${name} to be deleted`,
      );
    case 'foreign':
      throw new NameConflictError('PersistentVolumeClaim', childName);
  }
}

async function createClaim(scope: Scope, deps: ControllerDeps, childName: string): Promise<ClaimView> {
  const body = buildWorkspaceClaim(scope.session, scope.ref, deps.podOptions);
  try {
    const created = await deps.claims.create(scope.ref.namespace, body);
    scope.created = true;
    deps.logger.info('created workspace claim', {
      namespace: scope.ref.namespace,
      session: scope.ref.name,
      claim: childName,
      storageClass: body.spec?.storageClassName ?? '(default)',
    });
    deps.events.record(scope.session, {
      type: 'Normal',
      reason: EVENT_REASONS.createdWorkspace,
      action: 'Create',
      note: `Created PersistentVolumeClaim ${childName}`,
    });
    return created;
  } catch (err) {
    // A quota refusal (requests.storage, persistentvolumeclaims) is Ready=False/QuotaExceeded.
    if (isQuotaRefused(err)) throw err;
    if (!isAlreadyExists(err)) throw new Error(`create PersistentVolumeClaim ${childName}`, { cause: err });
    const fresh = await deps.claims.read(scope.ref.namespace, childName);
    if (!fresh)
      throw new Error(`PersistentVolumeClaim ${childName} already exists but could not be read`, {
        cause: err,
      });
    return fresh;
  }
}

function wait(scope: Scope, deps: ControllerDeps, message: string): PhaseResult {
  scope.waiting = message;
  return { halt: true, requeueAfterMs: deps.waitRequeueMs };
}
