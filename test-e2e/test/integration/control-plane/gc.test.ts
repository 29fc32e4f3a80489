import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type * as k8s from '@kubernetes/client-node';
import { API_VERSION, GROUP, KIND, PLURAL, VERSION } from '@sandbox-platform/api';

import {
  createTestNamespace,
  isNotFound,
  kubeClients,
  predicate,
  waitFor,
} from '../../../src/framework/index.js';
import type { TestNamespace } from '../../../src/framework/index.js';

/** Polls a Secret until it is gone; resolves with how long that took. */
async function secretGone(
  core: k8s.CoreV1Api,
  namespace: string,
  name: string,
  timeoutMs: number,
): Promise<number> {
  const started = Date.now();
  await waitFor(
    async () => {
      try {
        await core.readNamespacedSecret({ namespace, name });
        return false;
      } catch (err) {
        if (isNotFound(err)) return true;
        throw err;
      }
    },
    predicate(`Secret ${namespace}/${name} to be garbage-collected`, (gone: boolean) => gone),
    { timeoutMs },
  );
  return Date.now() - started;
}

function ownedSecret(
  name: string,
  owner: { apiVersion: string; kind: string; name: string; uid: string },
): k8s.V1Secret {
  return {
    metadata: { name, ownerReferences: [{ ...owner, controller: true, blockOwnerDeletion: true }] },
    stringData: { token: 'not-a-real-token' },
  };
}

describe('ownerReference garbage collection (kube-controller-manager)', () => {
  const { core, custom } = kubeClients();
  let ns: TestNamespace;

  beforeAll(async () => {
    ns = await createTestNamespace(core, { prefix: 'gc' });
  });
  afterAll(async () => {
    await ns.cleanup();
  });

  it('deleting a ConfigMap owner removes its Secret within seconds', async () => {
    const owner = await core.createNamespacedConfigMap({
      namespace: ns.name,
      body: { metadata: { name: 'owner' } },
    });
    const uid = owner.metadata?.uid ?? '';
    await core.createNamespacedSecret({
      namespace: ns.name,
      body: ownedSecret('owned', { apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid }),
    });
    await core.deleteNamespacedConfigMap({ namespace: ns.name, name: 'owner' });
    const tookMs = await secretGone(core, ns.name, 'owned', 15_000);
    expect(tookMs).toBeLessThan(15_000);
  });

  it('deleting a SandboxSession removes the Secret it owns', async () => {
    const session = (await custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: ns.name,
      plural: PLURAL,
      body: { apiVersion: API_VERSION, kind: KIND, metadata: { name: 's1' }, spec: {} },
    })) as k8s.KubernetesObject;
    await core.createNamespacedSecret({
      namespace: ns.name,
      body: ownedSecret('sbs-s1-token', {
        apiVersion: API_VERSION,
        kind: KIND,
        name: 's1',
        uid: session.metadata?.uid ?? '',
      }),
    });
    await custom.deleteNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: ns.name,
      plural: PLURAL,
      name: 's1',
    });
    // The garbage collector learns about a new CRD on its 30 s discovery resync, so the first
    // collection of a freshly applied CRD's dependents can take up to that long.
    await secretGone(core, ns.name, 'sbs-s1-token', 45_000);
  });
});
