/**
 * The CRD's schema is the validation: the API server must reject each invalid spec (and each
 * change of an immutable field) before the operator ever sees it.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { GROUP, PLURAL, VERSION } from '@sandbox-platform/api';
import * as k8s from '@kubernetes/client-node';

import { apiStatus, REPO_ROOT } from '@sandbox-platform/test-support';
import { OperatorFixture } from './harness/fixture.js';

const EXAMPLES = join(REPO_ROOT, 'crds/examples');

const fx = new OperatorFixture('op-valid');
const { kube, ns } = fx;

beforeAll(async () => {
  await fx.setup();
});

afterAll(async () => {
  await fx.teardown();
});

async function create(
  name: string,
  spec: unknown,
): Promise<{ code?: number; message: string; object?: Record<string, unknown> }> {
  try {
    const object = (await kube.custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      plural: PLURAL,
      namespace: ns.name,
      body: { apiVersion: `${GROUP}/${VERSION}`, kind: 'SandboxSession', metadata: { name }, spec },
    })) as Record<string, unknown>;
    return { message: '', object };
  } catch (err) {
    const body = err instanceof k8s.ApiException ? String(err.body) : String(err);
    return { code: apiStatus(err), message: body };
  }
}

describe('schema validation', () => {
  it.each<[string, string, unknown, RegExp]>([
    ['name longer than 63 characters', 'a'.repeat(64), {}, /DNS-1123 label/],
    ['empty image', 'v-image', { image: '' }, /spec.image/],
    ['unknown imagePullPolicy', 'v-pull', { imagePullPolicy: 'Sometimes' }, /imagePullPolicy/],
    ['negative idleTimeoutSeconds', 'v-idle-neg', { idleTimeoutSeconds: -1 }, /idleTimeoutSeconds/],
    ['idleTimeoutSeconds above 7 days', 'v-idle-max', { idleTimeoutSeconds: 604801 }, /idleTimeoutSeconds/],
    ['maxLifetimeSeconds below 60', 'v-life-min', { maxLifetimeSeconds: 59 }, /maxLifetimeSeconds/],
    ['maxLifetimeSeconds above 30 days', 'v-life-max', { maxLifetimeSeconds: 2592001 }, /maxLifetimeSeconds/],
    ['unknown shutdownPolicy', 'v-policy', { shutdownPolicy: 'Keep' }, /shutdownPolicy/],
    ['unknown execTransport', 'v-transport', { execTransport: 'SSH' }, /execTransport/],
    ['env name not an identifier', 'v-env-name', { env: [{ name: '1BAD', value: 'x' }] }, /env\[0\].name/],
    [
      'env name in the reserved SANDBOX_ space',
      'v-env-reserved',
      { env: [{ name: 'SANDBOX_TOKEN', value: 'x' }] },
      /reserved/,
    ],
    ['duplicate env names', 'v-env-dup', { env: [{ name: 'A' }, { name: 'A' }] }, /Duplicate value/],
    [
      'more than 64 env vars',
      'v-env-many',
      { env: Array.from({ length: 65 }, (_, i) => ({ name: `V${i}` })) },
      /must have at most 64 items/,
    ],
    ['malformed resource quantity', 'v-res', { resources: { limits: { memory: 'lots' } } }, /memory/],
    ['malformed workspace size', 'v-ws', { workspace: { sizeLimit: '1 GB' } }, /sizeLimit/],
    ['malformed runtimeClassName', 'v-rc', { runtimeClassName: 'Not_Valid' }, /runtimeClassName/],
    ['unknown toleration operator', 'v-tol', { tolerations: [{ key: 'k', operator: 'Maybe' }] }, /operator/],
    [
      'shutdownPolicy Suspend without a persistent workspace',
      'v-suspend-emptydir',
      { shutdownPolicy: 'Suspend' },
      /shutdownPolicy Suspend needs a persistent workspace/,
    ],
    [
      'unknown workspace access mode',
      'v-ws-mode',
      { workspace: { persistentVolumeClaim: { accessMode: 'ReadOnlyMany' } } },
      /accessMode/,
    ],
    [
      'empty storage class name',
      'v-ws-class-empty',
      { workspace: { persistentVolumeClaim: { storageClassName: '' } } },
      /storageClassName/,
    ],
    [
      'malformed storage class name',
      'v-ws-class-bad',
      { workspace: { persistentVolumeClaim: { storageClassName: 'Fast_SSD' } } },
      /storageClassName/,
    ],
    ['suspend not a boolean', 'v-suspend-str', { suspend: 'yes' }, /suspend/],
  ])('rejects %s', async (_what, name, spec, message) => {
    const res = await create(name, spec);
    expect(res.code).toBe(422);
    expect(res.message).toMatch(message);
  });

  it('rejects a session without spec', async () => {
    const res = await create('v-nospec', undefined);
    expect(res.code).toBe(422);
  });

  it('drops unknown fields and applies the defaults', async () => {
    const res = await create('v-defaults', { surprise: true });
    expect(res.code).toBeUndefined();
    expect(res.object?.spec).toEqual({
      idleTimeoutSeconds: 1800,
      shutdownPolicy: 'Delete',
      suspend: false,
      execTransport: 'Agent',
      imagePullPolicy: 'IfNotPresent',
      workspace: { sizeLimit: '1Gi' },
    });
  });

  it.each<[string, unknown, unknown, RegExp]>([
    ['image', { image: 'a:1' }, { image: 'a:2' }, /spec.image is immutable/],
    ['image (added)', {}, { image: 'a:2' }, /spec.image is immutable/],
    [
      'env',
      { env: [{ name: 'A', value: '1' }] },
      { env: [{ name: 'A', value: '2' }] },
      /spec.env is immutable/,
    ],
    ['resources', {}, { resources: { limits: { cpu: '2' } } }, /spec.resources is immutable/],
    ['workspace', {}, { workspace: { sizeLimit: '5Gi' } }, /spec.workspace is immutable/],
    [
      'workspace (made persistent)',
      {},
      { workspace: { persistentVolumeClaim: {} } },
      /spec.workspace is immutable/,
    ],
    [
      'shutdownPolicy to Suspend without a persistent workspace',
      {},
      { shutdownPolicy: 'Suspend' },
      /shutdownPolicy Suspend needs a persistent workspace/,
    ],
    ['execTransport', {}, { execTransport: 'KubernetesExec' }, /spec.execTransport is immutable/],
    ['nodeSelector', {}, { nodeSelector: { a: 'b' } }, /spec.nodeSelector is immutable/],
  ])('rejects changing %s', async (field, initial, change, message) => {
    const name = `imm-${field.replace(/[^a-z]/gi, '').toLowerCase()}`;
    expect((await create(name, initial)).code).toBeUndefined();
    const err = await kube.custom
      .patchNamespacedCustomObject(
        { group: GROUP, version: VERSION, plural: PLURAL, namespace: ns.name, name, body: { spec: change } },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      )
      .then(() => undefined)
      .catch((e: unknown) => e);
    expect(apiStatus(err)).toBe(422);
    expect(err instanceof k8s.ApiException ? String(err.body) : '').toMatch(message);
  });

  it.each(readdirSync(EXAMPLES).filter((f) => f.endsWith('.yaml')))(
    'accepts the example %s',
    async (file) => {
      const [doc] = k8s.loadAllYaml(readFileSync(join(EXAMPLES, file), 'utf8')) as Array<{
        metadata: { name: string };
        spec: unknown;
      }>;
      const res = await create(`example-${doc!.metadata.name}`, doc!.spec);
      expect([file, res.code, res.message]).toEqual([file, undefined, '']);
    },
  );

  it('accepts changing the lifecycle fields', async () => {
    expect((await create('mutable', {})).code).toBeUndefined();
    await kube.custom.patchNamespacedCustomObject(
      {
        group: GROUP,
        version: VERSION,
        plural: PLURAL,
        namespace: ns.name,
        name: 'mutable',
        body: {
          spec: { idleTimeoutSeconds: 60, maxLifetimeSeconds: 3600, shutdownPolicy: 'Retain', suspend: true },
        },
      },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
  });

  it('defaults a persistent workspace and accepts shutdownPolicy Suspend with it', async () => {
    const res = await create('v-persistent', {
      shutdownPolicy: 'Suspend',
      workspace: { persistentVolumeClaim: {} },
    });
    expect(res.code).toBeUndefined();
    expect((res.object?.spec as { workspace: unknown }).workspace).toEqual({
      sizeLimit: '1Gi',
      persistentVolumeClaim: { accessMode: 'ReadWriteOnce' },
    });
  });
});
