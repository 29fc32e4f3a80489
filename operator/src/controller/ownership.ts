/**
 * Who owns a child with our deterministic name. Ownership is decided by the controller
 * ownerReference's UID, never by name or labels (which anyone can set):
 *
 * - owned:    controller ref to this session's UID (and, for a Secret, a matching session-uid
 *             annotation). Ours to use and delete.
 * - previous: controller ref to a SandboxSession of the same name but another UID: the child of
 *             an earlier session that was deleted and re-created with this name. The garbage
 *             collector is removing it (its owner is gone); we wait and never reuse it, since its
 *             token was derived from the old UID.
 * - foreign:  anything else (no controller, or another controller). Never adopted or deleted.
 */
import { API_VERSION, KIND, type SandboxSession } from '@sandbox-platform/api';

import type { ChildMetadata, SecretView } from '../kube/views.js';

/** The verdict on a child object. */
export type Ownership = 'owned' | 'previous' | 'foreign';

/** Classifies a child by its controller ownerReference. */
export function classifyChild(meta: ChildMetadata, session: SandboxSession): Ownership {
  const ref = meta.controller;
  if (!ref || ref.kind !== KIND || ref.apiVersion.split('/')[0] !== API_VERSION.split('/')[0])
    return 'foreign';
  if (ref.uid === session.metadata.uid) return 'owned';
  return ref.name === session.metadata.name ? 'previous' : 'foreign';
}

/**
 * Classifies the token Secret. Ours only if both the controller ref and the session-uid
 * annotation name this session: a Secret carrying another UID's token must never be mounted.
 * An owned Secret whose annotation disagrees (edited by hand) is `tampered`: ours, so the
 * reconcile deletes it and creates it again (same derived token), and never mounts it meanwhile.
 */
export function classifySecret(secret: SecretView, session: SandboxSession): Ownership | 'tampered' {
  const verdict = classifyChild(secret.metadata, session);
  if (verdict === 'owned' && secret.sessionUID !== session.metadata.uid) return 'tampered';
  return verdict;
}
