/**
 * PersistentVolumeClaim helpers for the integration tests: the control-plane-only cluster has no
 * provisioner (and, depending on the localkube version, no PV controller), so the tests bind a
 * claim themselves exactly as the PV controller would: a PersistentVolume pre-bound to it
 * (claimRef), the claim's volumeName and bind annotations, and both statuses Bound. A PV
 * controller that does run sees a consistent binding and keeps it.
 */
import * as k8s from '@kubernetes/client-node';

import { isNotFound } from '@sandbox-platform/test-support';

const MERGE = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);

/** Creates a StorageClass whose provisioner nobody runs (claims stay Pending unless bound by hand). */
export async function createStorageClass(kc: k8s.KubeConfig, name: string): Promise<() => Promise<void>> {
  const storage = kc.makeApiClient(k8s.StorageV1Api);
  await storage.createStorageClass({
    body: {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name },
      provisioner: 'sandbox.dev/integration-test-none',
      volumeBindingMode: 'Immediate',
      reclaimPolicy: 'Delete',
    },
  });
  return async () => {
    try {
      await storage.deleteStorageClass({ name });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  };
}

/** Binds the claim to a new PersistentVolume of its class, as the PV controller would. */
export async function bindClaim(core: k8s.CoreV1Api, namespace: string, claimName: string): Promise<string> {
  const claim = await core.readNamespacedPersistentVolumeClaim({ namespace, name: claimName });
  const pvName = `pv-${namespace}-${claimName}`.slice(0, 253);
  const storage = claim.spec?.resources?.requests?.storage ?? '1Gi';
  await core.createPersistentVolume({
    body: {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: pvName, annotations: { 'pv.kubernetes.io/bound-by-controller': 'yes' } },
      spec: {
        capacity: { storage },
        accessModes: claim.spec?.accessModes,
        storageClassName: claim.spec?.storageClassName,
        persistentVolumeReclaimPolicy: 'Delete',
        hostPath: { path: `/tmp/${pvName}` },
        claimRef: {
          apiVersion: 'v1',
          kind: 'PersistentVolumeClaim',
          namespace,
          name: claimName,
          uid: claim.metadata?.uid,
          resourceVersion: claim.metadata?.resourceVersion,
        },
      },
    },
  });
  await core.patchPersistentVolumeStatus({ name: pvName, body: { status: { phase: 'Bound' } } }, MERGE);
  await core.patchNamespacedPersistentVolumeClaim(
    {
      namespace,
      name: claimName,
      body: {
        metadata: {
          annotations: {
            'pv.kubernetes.io/bind-completed': 'yes',
            'pv.kubernetes.io/bound-by-controller': 'yes',
          },
        },
        spec: { volumeName: pvName },
      },
    },
    MERGE,
  );
  await core.patchNamespacedPersistentVolumeClaimStatus(
    {
      namespace,
      name: claimName,
      body: { status: { phase: 'Bound', accessModes: claim.spec?.accessModes, capacity: { storage } } },
    },
    MERGE,
  );
  return pvName;
}

/** Reads a claim, undefined when absent. */
export async function readClaim(
  core: k8s.CoreV1Api,
  namespace: string,
  name: string,
): Promise<k8s.V1PersistentVolumeClaim | undefined> {
  try {
    return await core.readNamespacedPersistentVolumeClaim({ namespace, name });
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}
