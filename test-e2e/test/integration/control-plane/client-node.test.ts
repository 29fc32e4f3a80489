import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';

import { createTestNamespace, kubeClients } from '../../../src/framework/index.js';
import type { TestNamespace } from '../../../src/framework/index.js';

describe('@kubernetes/client-node with the generated kubeconfig', () => {
  const { core, kc } = kubeClients();
  let ns: TestNamespace;

  beforeAll(async () => {
    ns = await createTestNamespace(core, { prefix: 'client' });
  });
  afterAll(async () => {
    await ns.cleanup();
  });

  it('lists namespaces', async () => {
    const list = await core.listNamespace();
    const names = list.items.map((n) => n.metadata?.name);
    expect(names).toEqual(expect.arrayContaining(['default', 'kube-system', ns.name]));
  });

  it('receives a watch event for an object created after the watch started', async () => {
    const events: { type: string; name?: string }[] = [];
    let sawAdded!: () => void;
    const added = new Promise<void>((resolve) => (sawAdded = resolve));
    const watch = new k8s.Watch(kc);
    const controller = await watch.watch(
      `/api/v1/namespaces/${ns.name}/configmaps`,
      {},
      (type: string, obj: k8s.V1ConfigMap) => {
        events.push({ type, name: obj.metadata?.name });
        if (type === 'ADDED' && obj.metadata?.name === 'watched') sawAdded();
      },
      (err: unknown) => {
        if (err) events.push({ type: `ERROR ${err instanceof Error ? err.message : JSON.stringify(err)}` });
      },
    );
    let timer: NodeJS.Timeout | undefined;
    try {
      await core.createNamespacedConfigMap({ namespace: ns.name, body: { metadata: { name: 'watched' } } });
      await Promise.race([
        added,
        new Promise((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`no ADDED event in 10 s; events: ${JSON.stringify(events)}`)),
            10_000,
          );
        }),
      ]);
    } finally {
      clearTimeout(timer);
      controller.abort();
    }
    expect(events).toContainEqual({ type: 'ADDED', name: 'watched' });
  });
});
