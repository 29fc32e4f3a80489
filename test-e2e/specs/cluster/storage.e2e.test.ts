/**
 * e2e: dynamic storage on the local node (docs/adr/0014). A claim of the default StorageClass
 * (local-path) is provisioned for a PodSecurity-`restricted` Pod (UID 1000, no capabilities),
 * which can write it; the data outlives the Pod; deleting the claim deletes the volume and its
 * directory (the provisioner's teardown helper), so nothing piles up under the state dir.
 */
import { existsSync } from 'node:fs';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';

import {
  createTestNamespace,
  kubeClients,
  kubectl,
  podPhase,
  testboxPod,
  waitForPod,
  type TestNamespace,
} from '../../src/framework/index.js';
import { NOT_LOCAL_REASON, notRun, onLocalCluster } from '../../src/framework/not-run.js';
import { predicate, waitFor } from '@sandbox-platform/test-support';

const { core, kc } = kubeClients();
const storage = kc.makeApiClient(k8s.StorageV1Api);

describe('dynamic provisioning (local-path, the default StorageClass)', () => {
  let ns: TestNamespace;

  beforeAll(async () => {
    ns = await createTestNamespace(core, {
      prefix: 'storage',
      labels: { 'pod-security.kubernetes.io/enforce': 'restricted' },
    });
  });
  afterAll(async () => {
    await ns.cleanup();
  });

  it('local-path is the one default StorageClass, WaitForFirstConsumer', async () => {
    const classes = await storage.listStorageClass();
    const defaults = classes.items.filter(
      (c) => c.metadata?.annotations?.['storageclass.kubernetes.io/is-default-class'] === 'true',
    );
    expect(defaults.map((c) => [c.metadata?.name, c.provisioner, c.volumeBindingMode])).toEqual([
      ['local-path', 'rancher.io/local-path', 'WaitForFirstConsumer'],
    ]);
  });

  it('provisions a claim for a restricted Pod that writes it as UID 1000; the data outlives the Pod; deleting the claim removes the volume', async () => {
    await core.createNamespacedPersistentVolumeClaim({
      namespace: ns.name,
      body: {
        metadata: { name: 'data' },
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '64Mi' } } },
      },
    });
    const withClaim = (pod: k8s.V1Pod): void => {
      pod.spec!.volumes = [{ name: 'data', persistentVolumeClaim: { claimName: 'data' } }];
      pod.spec!.containers[0]!.volumeMounts = [{ name: 'data', mountPath: '/data' }];
    };
    await core.createNamespacedPod({
      namespace: ns.name,
      body: testboxPod('writer', ['bash', '-c', 'id -u > /data/who && echo kept > /data/file'], withClaim),
    });
    await waitForPod(core, { namespace: ns.name, name: 'writer' }, podPhase('Succeeded'), 120_000);
    const claim = await core.readNamespacedPersistentVolumeClaim({ namespace: ns.name, name: 'data' });
    expect(claim.status?.phase).toBe('Bound');
    expect(claim.spec?.storageClassName).toBe('local-path');
    const pv = await core.readPersistentVolume({ name: claim.spec!.volumeName! });
    const dir = pv.spec?.hostPath?.path ?? pv.spec?.local?.path;
    expect(dir).toBeDefined();

    await core.createNamespacedPod({
      namespace: ns.name,
      body: testboxPod('reader', ['sleep', '3600'], withClaim),
    });
    await waitForPod(core, { namespace: ns.name, name: 'reader' }, podPhase('Running'), 120_000);
    const read = await kubectl(['exec', '-n', ns.name, 'reader', '--', 'cat', '/data/who', '/data/file']);
    expect(read.stdout).toBe('1000\nkept\n');

    // Deleting the Pods, then the claim: the volume and (on this host) its directory go.
    await core.deleteNamespacedPod({ namespace: ns.name, name: 'reader', gracePeriodSeconds: 0 });
    await core.deleteNamespacedPod({ namespace: ns.name, name: 'writer', gracePeriodSeconds: 0 });
    await core.deleteNamespacedPersistentVolumeClaim({ namespace: ns.name, name: 'data' });
    await waitFor(
      async () =>
        (await core.listPersistentVolume()).items.some((v) => v.metadata?.name === pv.metadata?.name),
      predicate('the volume deleted', (exists) => !exists),
      { timeoutMs: 120_000 },
    );
    if (onLocalCluster) expect(existsSync(dir!)).toBe(false);
    else notRun('the volume directory is removed from the node', NOT_LOCAL_REASON);
  });
});
