/**
 * removeChildren: deletes the session's own Pod and Secret (never anyone else's: ownership is
 * checked, and the delete carries a UID precondition). Used when a session with shutdownPolicy
 * Retain is collected, and on every later reconcile of it, so its children never come back. The
 * workspace claim is kept: it goes with the session when the session is deleted.
 */
import { secretName } from '@sandbox-platform/api';

import { classifySecret } from './ownership.js';
import type { ControllerDeps, PhaseResult, Scope } from './scope.js';
import { suspendPod } from './suspend-phase.js';

/** Deletes the owned children that still exist. */
export async function removeChildren(scope: Scope, deps: ControllerDeps): Promise<PhaseResult> {
  const { namespace, name } = scope.ref;
  await suspendPod(scope, deps);
  const secret = scope.secret ?? deps.secrets.cached(namespace, secretName(name));
  const verdict = secret && classifySecret(secret, scope.session);
  if (secret && (verdict === 'owned' || verdict === 'tampered') && !secret.metadata.deletionTimestamp) {
    await deps.secrets.delete(namespace, secret.metadata.name, secret.metadata.uid);
    deps.logger.info('deleted secret of collected session', {
      namespace,
      session: name,
      secret: secret.metadata.name,
    });
  }
  scope.secret = undefined;
  return {};
}
