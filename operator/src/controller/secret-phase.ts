/**
 * ensureSecret: the session's token Secret exists, is ours, and carries this session's UID.
 * Created before the Pod (the Pod mounts it). Never updated: the token derives from the session
 * UID, so it cannot go stale, and a Secret of an earlier session with the same name (another UID,
 * so another token) is never reused.
 */
import { EVENT_REASONS, deriveToken, secretName } from '@sandbox-platform/api';

import { isAlreadyExists, isQuotaRefused } from '../kube/errors.js';
import type { SecretView } from '../state/views.js';
import { buildSecret } from '../resources/secret.js';
import { NameConflictError } from './errors.js';
import { classifySecret } from './ownership.js';
import type { ControllerDeps, PhaseResult, Scope } from './scope.js';

/** Ensures the Secret; halts the provisioning phases until it is usable. */
export async function ensureSecret(scope: Scope, deps: ControllerDeps): Promise<PhaseResult> {
  const { namespace, name } = scope.ref;
  const childName = secretName(name);
  const existing = deps.secrets.cached(namespace, childName) ?? (await createSecret(scope, deps, childName));
  switch (classifySecret(existing, scope.session)) {
    case 'owned':
      if (existing.metadata.deletionTimestamp) {
        return wait(scope, deps, `Secret ${childName} is being deleted; it will be created again`);
      }
      scope.secret = existing;
      return {};
    case 'tampered':
      deps.logger.warn(
        'secret annotation does not match its owner; replacing it',
        logFields(scope, childName),
      );
      await deps.secrets.delete(namespace, childName, existing.metadata.uid);
      return wait(scope, deps, `Secret ${childName} did not match this session and is being replaced`);
    case 'previous':
      return wait(
        scope,
        deps,
        `Waiting for Secret ${childName} of a previous SandboxSession named ${name} to be deleted`,
      );
    case 'foreign':
      throw new NameConflictError('Secret', childName);
  }
}

async function createSecret(scope: Scope, deps: ControllerDeps, childName: string): Promise<SecretView> {
  const body = buildSecret(scope.ref, deriveToken(deps.masterKey, scope.ref));
  try {
    const created = await deps.secrets.create(scope.ref.namespace, body);
    scope.created = true;
    // debug: the Pod's "created pod" line (info) names the Secret too; one line per session.
    deps.logger.debug('created secret', logFields(scope, childName));
    // Its Event waits: the Pod's CreatedPod (or a warm Pod's BoundFromPool) usually names it.
    scope.secretCreated = childName;
    return created;
  } catch (err) {
    // A quota refusal is a condition of the namespace, not a failure: Ready=False/QuotaExceeded.
    if (isQuotaRefused(err)) throw err;
    if (!isAlreadyExists(err)) throw new Error(`create Secret ${childName}`, { cause: err });
    // The cache lagged, or another writer won: read it and judge ownership on the fresh object.
    const fresh = await deps.secrets.read(scope.ref.namespace, childName);
    if (!fresh) throw new Error(`Secret ${childName} already exists but could not be read`, { cause: err });
    return fresh;
  }
}

/**
 * The Secret created by this reconcile, for the Event that names it; once taken, nothing else
 * records it.
 */
export function takeCreatedSecret(scope: Scope): string | undefined {
  const name = scope.secretCreated;
  scope.secretCreated = undefined;
  return name;
}

/**
 * Records CreatedSecret when no Pod Event of this reconcile named the Secret (the Pod waits for a
 * workspace, for env Secrets, or was refused): run by the driver after the provisioning phases.
 */
export function recordCreatedSecret(scope: Scope, deps: ControllerDeps): void {
  const name = takeCreatedSecret(scope);
  if (!name) return;
  deps.events.record(scope.session, {
    type: 'Normal',
    reason: EVENT_REASONS.createdSecret,
    action: 'Create',
    note: `Created Secret ${name}`,
  });
}

function wait(scope: Scope, deps: ControllerDeps, message: string): PhaseResult {
  scope.waiting = message;
  return { halt: true, requeueAfterMs: deps.waitRequeueMs };
}

function logFields(scope: Scope, secret: string): Record<string, string> {
  return { namespace: scope.ref.namespace, session: scope.ref.name, secret };
}
