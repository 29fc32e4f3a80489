/**
 * The workspace PersistentVolumeClaim of a session with spec.workspace.persistentVolumeClaim.
 * Pure: no I/O, table-tested.
 *
 * Owned like the Pod and Secret (controller ownerReference, so the garbage collector deletes it
 * with the session; the data then goes the way of the StorageClass's reclaimPolicy). Never
 * updated: spec.workspace is immutable, and a claim's size could only grow anyway.
 */
import type { V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { workspaceClaimName, type SandboxSession } from '@sandbox-platform/api';

import { childMetadata, type SessionRef } from './metadata.js';
import type { PodBuildOptions } from './pod-options.js';

/** True when the session keeps /workspace on a PersistentVolumeClaim. */
export function hasPersistentWorkspace(session: SandboxSession): boolean {
  return session.spec.workspace?.persistentVolumeClaim !== undefined;
}

/** The workspace size: spec.workspace.sizeLimit, else the operator default. */
export function workspaceSize(
  session: SandboxSession,
  opts: Pick<PodBuildOptions, 'defaultWorkspaceSize'>,
): string {
  const size = session.spec.workspace?.sizeLimit;
  return size === undefined ? opts.defaultWorkspaceSize : String(size);
}

/** Builds the claim; only for sessions with a persistent workspace. */
export function buildWorkspaceClaim(
  session: SandboxSession,
  ref: SessionRef,
  opts: Pick<PodBuildOptions, 'defaultWorkspaceSize'>,
): V1PersistentVolumeClaim {
  const pvc = session.spec.workspace?.persistentVolumeClaim;
  if (!pvc) throw new Error('buildWorkspaceClaim: the session has no persistent workspace');
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: childMetadata(ref, workspaceClaimName(ref.name)),
    spec: {
      accessModes: [pvc.accessMode ?? 'ReadWriteOnce'],
      // Unset: the DefaultStorageClass admission plugin fills in the cluster's default class.
      storageClassName: pvc.storageClassName,
      volumeMode: 'Filesystem',
      resources: { requests: { storage: workspaceSize(session, opts) } },
    },
  };
}
