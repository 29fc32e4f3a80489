/**
 * Metadata every child of a session carries: the controller ownerReference (so the garbage
 * collector deletes the child with its session, and so ownership can be checked by UID) and
 * the labels the informers select on.
 */
import type { V1ObjectMeta, V1OwnerReference } from '@kubernetes/client-node';
import {
  API_VERSION,
  KIND,
  LABELS,
  MANAGER_NAME,
  sessionLabelValue,
  type SandboxSession,
} from '@sandbox-platform/api';

/** The identity fields of a session that its children refer to. */
export interface SessionRef {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
}

/** Reads namespace, name and UID of a session as served by the API server; throws if any is missing. */
export function sessionRef(session: SandboxSession): SessionRef {
  const { namespace, name, uid } = session.metadata;
  if (!namespace || !name || !uid) throw new Error('session metadata lacks namespace, name or uid');
  return { namespace, name, uid };
}

/**
 * The controller ownerReference to the session. blockOwnerDeletion makes a foreground deletion
 * of the session wait for its children (it needs `update` on sandboxsessions/finalizers where the
 * OwnerReferencesPermissionEnforcement admission plugin is on).
 */
export function controllerRef(ref: SessionRef): V1OwnerReference {
  return {
    apiVersion: API_VERSION,
    kind: KIND,
    name: ref.name,
    uid: ref.uid,
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** Labels of every child: the manager (informers select on it) and the session. */
export function childLabels(ref: SessionRef): Record<string, string> {
  return {
    [LABELS.managedBy]: MANAGER_NAME,
    [LABELS.session]: sessionLabelValue(ref.name),
  };
}

/** The label selector of the owned-object informers. */
export const CHILD_SELECTOR = `${LABELS.managedBy}=${MANAGER_NAME}`;

/** Metadata of a child named `name`. */
export function childMetadata(
  ref: SessionRef,
  name: string,
  extraLabels: Record<string, string> = {},
): V1ObjectMeta {
  return {
    name,
    namespace: ref.namespace,
    labels: { ...childLabels(ref), ...extraLabels },
    ownerReferences: [controllerRef(ref)],
  };
}
