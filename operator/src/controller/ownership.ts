/**
 * Who owns a child with our deterministic name (or a pool Pod bound to a session). Ownership is
 * decided by the exact controller ownerReference, in the session's namespace, never by name or
 * labels (which anyone can set), nor by a partial match of the reference: a tenant once planted a
 * Pod in its own namespace whose controller reference named another tenant's session UID under a
 * made-up apiVersion, and the operator took it for that session's Pod (issue 25; ADR 0027). The
 * test itself is the one the gateway uses too (`controlledBySession`, crds/src/ownership.ts).
 *
 * - owned:    in the session's namespace, controller ref = this session exactly (served
 *             apiVersion, kind, name, UID); for a Secret also a matching session-uid annotation.
 *             Ours to use and delete.
 * - previous: in the session's namespace, controller ref to a SandboxSession (served apiVersion)
 *             of the same name but another UID: the child of an earlier session that was deleted
 *             and re-created with this name. The garbage collector is removing it (its owner is
 *             gone); we wait and never reuse it, since its token was derived from the old UID.
 * - foreign:  anything else (no controller, another controller, a reference under an apiVersion
 *             we do not serve, which the garbage collector cannot resolve and so never removes,
 *             another namespace). Never adopted, used or deleted.
 */
import {
  KIND,
  controlledBySession,
  isPlatformRef,
  type OwnerIdentity,
  type SandboxSession,
} from '@sandbox-platform/api';

import type { ChildMetadata, SecretView } from '../state/views.js';

/** The verdict on a child object. */
export type Ownership = 'owned' | 'previous' | 'foreign';

/** The identity children of the session refer to ('' where the session lacks a field: matches nothing). */
export function sessionIdentity(session: SandboxSession): OwnerIdentity {
  const { namespace = '', name = '', uid = '' } = session.metadata;
  return { namespace, name, uid };
}

/** True when the child is exactly the session's (namespace and full controller reference). */
export function isOwnedBy(meta: ChildMetadata, owner: OwnerIdentity): boolean {
  return controlledBySession(meta.namespace, meta.controller, owner);
}

/** Classifies a child by its namespace and controller ownerReference. */
export function classifyChild(meta: ChildMetadata, session: SandboxSession): Ownership {
  const owner = sessionIdentity(session);
  if (isOwnedBy(meta, owner)) return 'owned';
  const ref = meta.controller;
  const previous =
    meta.namespace === owner.namespace &&
    owner.name !== '' &&
    isPlatformRef(ref) &&
    ref?.kind === KIND &&
    ref.name === owner.name;
  return previous ? 'previous' : 'foreign';
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
