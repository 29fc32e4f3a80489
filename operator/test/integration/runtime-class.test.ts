/**
 * The default RuntimeClass on a real API server (issue 25: gVisor by default where it exists;
 * kube/runtime-class.ts): the operator reads node.k8s.io/v1 runtimeclasses/<name> at start.
 *
 * - it exists: a session that names no runtime gets it (gauge 1);
 * - it does not exist: such a session's Pod gets no runtimeClassName (the node's default runtime;
 *   the API server would refuse a Pod naming a missing RuntimeClass), one warning, gauge 0; a
 *   session that names an existing RuntimeClass gets exactly that one.
 */
import { randomBytes } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';

import { predicate, waitFor } from '@sandbox-platform/test-support';
import { OperatorFixture } from './harness/fixture.js';
import type { OperatorProcess } from './harness/operator-process.js';
import { readPod } from './harness/sessions.js';

const fx = new OperatorFixture('op-rtc');
const { kube, ns, sessions } = fx;
const node = kube.kc.makeApiClient(k8s.NodeV1Api);
const existing = `it-rc-${randomBytes(4).toString('hex')}`;
const missing = `it-missing-${randomBytes(4).toString('hex')}`;

beforeAll(async () => {
  await fx.setup();
  await node.createRuntimeClass({ body: { metadata: { name: existing }, handler: 'runsc' } });
});

afterAll(async () => {
  await fx.teardown('SIGTERM');
  await node.deleteRuntimeClass({ name: existing });
});

async function podOf(name: string): Promise<k8s.V1Pod> {
  return (await waitFor(
    () => readPod(kube.core, ns.name, `sbs-${name}`),
    predicate(`Pod sbs-${name}`, (p) => p !== undefined),
  ))!;
}

async function gauge(op: OperatorProcess): Promise<string | undefined> {
  const { body } = await op.get('/metrics');
  return /^sandbox_operator_default_runtime_class_available (\d+)$/m.exec(body)?.[1];
}

describe('SANDBOX_DEFAULT_RUNTIME_CLASS_NAME', () => {
  it('names an existing RuntimeClass: sessions without a runtime of their own run under it', async () => {
    const op = await fx.startController({
      env: { LEADER_ELECT: 'false', SANDBOX_DEFAULT_RUNTIME_CLASS_NAME: existing },
    });
    await sessions.create('with-default');
    expect((await podOf('with-default')).spec?.runtimeClassName).toBe(existing);
    expect(await gauge(op)).toBe('1');
    expect(op.lines.filter((l) => l.level === 'warn' && /RuntimeClass/.test(String(l.message)))).toEqual([]);
    await op.stop('SIGTERM');
  });

  it('names a missing RuntimeClass: the node default runtime, one warning, gauge 0; an explicit one is kept', async () => {
    const op = await fx.startController({
      env: { LEADER_ELECT: 'false', SANDBOX_DEFAULT_RUNTIME_CLASS_NAME: missing },
    });
    await sessions.create('no-default');
    await sessions.create('explicit', { runtimeClassName: existing });
    expect((await podOf('no-default')).spec?.runtimeClassName).toBeUndefined();
    expect((await podOf('explicit')).spec?.runtimeClassName).toBe(existing);
    expect(await gauge(op)).toBe('0');
    const warnings = op.lines.filter((l) => l.level === 'warn' && /RuntimeClass/.test(String(l.message)));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ runtimeClass: missing });
    await op.stop('SIGTERM');
  });
});
