import { describe, expect, it } from '@jest/globals';
import { API_VERSION, GROUP, KIND, PLURAL, VERSION } from '@sandbox-platform/api';

import { createTestNamespace, kubeClients } from '../../../src/framework/index.js';

describe('namespace deletion (namespace controller)', () => {
  const { core, custom } = kubeClients();

  it('completes for a namespace holding core objects and custom resources', async () => {
    const ns = await createTestNamespace(core, { prefix: 'nsdel' });
    await core.createNamespacedConfigMap({ namespace: ns.name, body: { metadata: { name: 'cm' } } });
    await core.createNamespacedSecret({
      namespace: ns.name,
      body: { metadata: { name: 's' }, stringData: { a: 'b' } },
    });
    await custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: ns.name,
      plural: PLURAL,
      body: { apiVersion: API_VERSION, kind: KIND, metadata: { name: 'session' }, spec: {} },
    });
    const started = Date.now();
    await ns.cleanup({ wait: true, timeoutMs: 60_000 });
    expect(Date.now() - started).toBeLessThan(60_000);
  });
});
