import https from 'node:https';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { API_VERSION, GROUP, KIND, PLURAL, VERSION } from '@sandbox-platform/api';

import { apiStatus, createTestNamespace, isEstablished, kubeClients } from '../../../src/framework/index.js';
import type { TestNamespace } from '../../../src/framework/index.js';

const CRD_NAME = `${PLURAL}.${GROUP}`;

/** Creates a SandboxSession and returns the API error's HTTP status and body, or undefined. */
async function createSession(
  custom: k8s.CustomObjectsApi,
  namespace: string,
  name: string,
  spec: Record<string, unknown>,
): Promise<{ status?: number; body: string }> {
  try {
    await custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace,
      plural: PLURAL,
      body: { apiVersion: API_VERSION, kind: KIND, metadata: { name }, spec },
    });
    return { body: '' };
  } catch (err) {
    return { status: apiStatus(err), body: err instanceof k8s.ApiException ? String(err.body) : String(err) };
  }
}

describe('the SandboxSession CRD on the control plane', () => {
  const { core, custom, kc } = kubeClients();
  const ext = kc.makeApiClient(k8s.ApiextensionsV1Api);
  let ns: TestNamespace;

  beforeAll(async () => {
    ns = await createTestNamespace(core, { prefix: 'crd' });
  });
  afterAll(async () => {
    await ns.cleanup();
  });

  it('is Established with a structural schema, a status subresource and printer columns', async () => {
    const crd = await ext.readCustomResourceDefinition({ name: CRD_NAME });
    expect(isEstablished(crd)).toBe(true);
    // A non-structural schema would show up as a NonStructuralSchema condition.
    expect(crd.status?.conditions?.map((c) => c.type)).not.toContain('NonStructuralSchema');
    const version = crd.spec.versions.find((v) => v.name === VERSION);
    expect(version?.subresources?.status).toEqual({});
    expect(version?.additionalPrinterColumns?.map((c) => c.name)).toEqual(
      expect.arrayContaining(['Ready', 'Reason', 'Pod IP', 'Expires', 'Age']),
    );
  });

  it('accepts a valid object and applies the schema defaults', async () => {
    const created = await createSession(custom, ns.name, 'valid', { image: 'example/sandbox:1' });
    expect(created.status).toBeUndefined();
    const session = (await custom.getNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: ns.name,
      plural: PLURAL,
      name: 'valid',
    })) as { spec: Record<string, unknown> };
    expect(session.spec).toMatchObject({ idleTimeoutSeconds: 1800, shutdownPolicy: 'Delete' });
  });

  it('rejects an object outside the OpenAPI schema with the schema message', async () => {
    const rejected = await createSession(custom, ns.name, 'negative-idle', { idleTimeoutSeconds: -5 });
    expect(rejected.status).toBe(422);
    expect(rejected.body).toContain('spec.idleTimeoutSeconds');
    expect(rejected.body).toContain('should be greater than or equal to 0');
  });

  it('rejects an object breaking a CEL rule with the rule message', async () => {
    const rejected = await createSession(custom, ns.name, 'reserved-env', {
      env: [{ name: 'SANDBOX_TOKEN', value: 'x' }],
    });
    expect(rejected.status).toBe(422);
    expect(rejected.body).toContain('env names starting with SANDBOX_ are reserved for the platform');
  });

  it('serves the printer columns in the Table format kubectl uses', async () => {
    const table = await fetchTable(kc, `/apis/${GROUP}/${VERSION}/namespaces/${ns.name}/${PLURAL}`);
    expect(table.columnDefinitions.map((c) => c.name)).toEqual(
      expect.arrayContaining(['Name', 'Ready', 'Reason', 'Pod IP', 'Last Activity', 'Expires', 'Age']),
    );
    expect(table.rows.length).toBeGreaterThanOrEqual(1);
  });
});

interface Table {
  columnDefinitions: { name: string }[];
  rows: unknown[];
}

/** GETs a list as a meta.k8s.io Table (what `kubectl get` asks for). */
async function fetchTable(kc: k8s.KubeConfig, path: string): Promise<Table> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('kubeconfig has no current cluster');
  const opts: https.RequestOptions = { headers: { Accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' } };
  await kc.applyToHTTPSOptions(opts);
  const body = await new Promise<string>((resolve, reject) => {
    https
      .get(`${cluster.server}${path}`, opts, (res) => {
        let data = '';
        res.on('data', (chunk: Buffer) => (data += chunk.toString()));
        res.on('end', () =>
          res.statusCode === 200
            ? resolve(data)
            : reject(new Error(`GET ${path}: ${res.statusCode} ${data}`)),
        );
      })
      .on('error', reject);
  });
  return JSON.parse(body) as Table;
}
