/**
 * The total size cap of spec.env (a CEL rule of the CRD, ENV_MAX_TOTAL_BYTES) on a real API
 * server: the per-item limits alone admit 64 x 32 KiB = 2 MiB of env per session. The rule's
 * estimated cost must also fit the API server's CEL budget, or the CRD itself is refused at apply
 * (globalSetup applies it, so a refused CRD fails every test here).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { API_VERSION, ENV_MAX_TOTAL_BYTES, GROUP, KIND, PLURAL, VERSION } from '@sandbox-platform/api';

import { apiStatus, createTestNamespace, kubeClients } from '../../../src/framework/index.js';
import type { TestNamespace } from '../../../src/framework/index.js';

type Env = { name: string; value?: string }[];

/** Creates a session with `env`; resolves to the API error's status and body, or {} when created. */
async function createWithEnv(
  custom: k8s.CustomObjectsApi,
  namespace: string,
  name: string,
  env: Env,
): Promise<{ status?: number; body?: string }> {
  try {
    await custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace,
      plural: PLURAL,
      body: { apiVersion: API_VERSION, kind: KIND, metadata: { name }, spec: { env } },
    });
    return {};
  } catch (err) {
    return { status: apiStatus(err), body: err instanceof k8s.ApiException ? String(err.body) : String(err) };
  }
}

/** `count` entries named V0.. whose names and values add up to exactly `total` bytes. */
function envOfBytes(total: number, count: number): Env {
  const env: Env = [];
  let left = total;
  for (let i = 0; i < count; i++) {
    const name = `V${i}`;
    const share = i === count - 1 ? left - name.length : Math.floor(total / count) - name.length;
    env.push({ name, value: 'x'.repeat(share) });
    left -= name.length + share;
  }
  return env;
}

const MESSAGE = 'spec.env is too large';

describe('the total size of spec.env', () => {
  const { core, custom } = kubeClients();
  let ns: TestNamespace;

  beforeAll(async () => {
    ns = await createTestNamespace(core, { prefix: 'env-size' });
  });
  afterAll(async () => {
    await ns.cleanup();
  });

  it('accepts an env of exactly the cap', async () => {
    const env = envOfBytes(ENV_MAX_TOTAL_BYTES, 4);
    expect(env.reduce((n, e) => n + e.name.length + (e.value ?? '').length, 0)).toBe(ENV_MAX_TOTAL_BYTES);
    await expect(createWithEnv(custom, ns.name, 'at-cap', env)).resolves.toEqual({});
  });

  it('refuses one byte over the cap, each entry within its own limits, with the rule message', async () => {
    const env = envOfBytes(ENV_MAX_TOTAL_BYTES + 1, 4);
    const refused = await createWithEnv(custom, ns.name, 'over-cap', env);
    expect(refused.status).toBe(422);
    expect(refused.body).toContain(MESSAGE);
    expect(refused.body).toContain('spec.env');
  });

  it('refuses the largest env the per-item limits allow (64 x 32 KiB)', async () => {
    const env = Array.from({ length: 64 }, (_, i) => ({ name: `V${i}`, value: 'x'.repeat(32768) }));
    const refused = await createWithEnv(custom, ns.name, 'max-items', env);
    expect(refused.status).toBe(422);
    expect(refused.body).toContain(MESSAGE);
  });

  it('counts bytes, not characters: multi-byte values reach the cap sooner', async () => {
    // 3 bytes per character: 12,000 characters are 36,000 bytes, over the cap; as characters
    // they would be under it.
    const env = [{ name: 'WIDE', value: '€'.repeat(12_000) }];
    const refused = await createWithEnv(custom, ns.name, 'multibyte', env);
    expect(refused.status).toBe(422);
    expect(refused.body).toContain(MESSAGE);
  });

  it('accepts entries without a value', async () => {
    await expect(createWithEnv(custom, ns.name, 'no-value', [{ name: 'EMPTY' }])).resolves.toEqual({});
  });
});
