/**
 * ensurePod: the session's Pod exists and is ours. A Pod deleted from outside is created again
 * (on the same workspace claim, when the workspace is persistent);
 * a Pod in a terminal phase (evicted, node lost: with restartPolicy Always nothing else ends a
 * Pod) is deleted so that the next reconcile creates a fresh one. Pod specs are never updated: the
 * fields that shape the Pod are immutable in the CRD. A Pod whose env names Secrets is created
 * only once they resolve (Ready=False/SecretNotFound meanwhile: env-sources.ts).
 */
import { EVENT_REASONS, podName } from '@sandbox-platform/api';

import { isAlreadyExists, isQuotaRefused } from '../kube/errors.js';
import type { PodView } from '../state/views.js';
import { buildPod } from '../resources/pod.js';
import { hasPersistentWorkspace } from '../resources/workspace-claim.js';
import { hasSecretRefs, sessionEnvOf } from './env-sources.js';
import { NameConflictError } from './errors.js';
import { classifyChild } from './ownership.js';
import { isTerminal } from './pod-readiness.js';
import type { ControllerDeps, PhaseResult, Scope } from './scope.js';
import { takeCreatedSecret } from './secret-phase.js';

/** Ensures the Pod (only once the Secret, and a persistent workspace's claim, are usable). */
export async function ensurePod(scope: Scope, deps: ControllerDeps): Promise<PhaseResult> {
  if (!scope.secret || (hasPersistentWorkspace(scope.session) && !scope.claim)) return {};
  const { namespace, name } = scope.ref;
  const childName = podNameOf(scope);
  const existing =
    scope.pod ?? deps.pods.cached(namespace, childName) ?? (await createIfReady(scope, deps, childName));
  if (!existing) return { halt: true, requeueAfterMs: deps.waitRequeueMs };
  switch (classifyChild(existing.metadata, scope.session)) {
    case 'owned':
      scope.pod = existing;
      if (existing.metadata.deletionTimestamp) return { requeueAfterMs: deps.waitRequeueMs };
      if (isTerminal(existing)) {
        deps.logger.warn('pod ended; deleting it so it is created again', {
          namespace,
          session: name,
          pod: childName,
          phase: existing.phase,
          reason: existing.reason,
        });
        await deps.pods.delete(namespace, childName, existing.metadata.uid);
        return { requeueAfterMs: deps.waitRequeueMs };
      }
      return {};
    case 'previous':
      scope.waiting = `Waiting for Pod ${childName} of a previous SandboxSession named ${name} to be deleted`;
      return { requeueAfterMs: deps.waitRequeueMs };
    case 'foreign':
      throw new NameConflictError('Pod', childName);
  }
}

/** A Pod bound from a pool (claim-phase.ts) is named after its pool; any other is podName(name). */
function podNameOf(scope: Scope): string {
  return scope.pod?.metadata.name ?? podName(scope.ref.name);
}

/**
 * Creates the Pod once the Secrets spec.env names resolve (the kubelet reads them: env-sources.ts);
 * undefined, with scope.envProblem set, while they do not.
 */
async function createIfReady(
  scope: Scope,
  deps: ControllerDeps,
  childName: string,
): Promise<PodView | undefined> {
  if (hasSecretRefs(scope.session.spec) && !(await sessionEnvOf(scope, deps.tenantSecrets))) return undefined;
  return createPod(scope, deps, childName);
}

async function createPod(scope: Scope, deps: ControllerDeps, childName: string): Promise<PodView> {
  const body = buildPod(scope.podSource ?? scope.session, scope.ref, deps.podOptions);
  try {
    const created = await deps.pods.create(scope.ref.namespace, body);
    scope.created = true;
    deps.logger.info('created pod', {
      namespace: scope.ref.namespace,
      session: scope.ref.name,
      pod: childName,
      secret: scope.secret?.metadata.name,
    });
    const secret = takeCreatedSecret(scope);
    deps.events.record(scope.session, {
      type: 'Normal',
      reason: EVENT_REASONS.createdPod,
      action: 'Create',
      note: secret ? `Created Pod ${childName} and its token Secret ${secret}` : `Created Pod ${childName}`,
    });
    return created;
  } catch (err) {
    // A quota refusal is a condition of the namespace, not a failure: Ready=False/QuotaExceeded.
    if (isQuotaRefused(err)) throw err;
    if (!isAlreadyExists(err)) throw new Error(`create Pod ${childName}`, { cause: err });
    const fresh = await deps.pods.read(scope.ref.namespace, childName);
    if (!fresh) throw new Error(`Pod ${childName} already exists but could not be read`, { cause: err });
    return fresh;
  }
}
