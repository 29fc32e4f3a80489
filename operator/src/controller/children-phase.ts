/**
 * removeChildren: deletes the session's own Pod and Secret (never anyone else's: ownership is
 * checked, and the delete carries a UID precondition). Used when a session with shutdownPolicy
 * Retain is collected, and on every later reconcile of it, so its children never come back.
 */
import { podName, secretName } from '@sandbox-platform/api';

import { classifyChild, classifySecret } from './ownership.js';
import type { ControllerDeps, PhaseResult, Scope } from './scope.js';

/** Deletes the owned children that still exist. */
export async function removeChildren(scope: Scope, deps: ControllerDeps): Promise<PhaseResult> {
  const { namespace, name } = scope.ref;
  const pod = scope.pod ?? deps.pods.cached(namespace, podName(name));
  if (pod && classifyChild(pod.metadata, scope.session) === 'owned' && !pod.metadata.deletionTimestamp) {
    await deps.pods.delete(namespace, pod.metadata.name, pod.metadata.uid);
    deps.logger.info('deleted pod of collected session', {
      namespace,
      session: name,
      pod: pod.metadata.name,
    });
  }
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
  scope.pod = undefined;
  scope.secret = undefined;
  return {};
}
