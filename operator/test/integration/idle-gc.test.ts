/**
 * Idle and lifetime collection on a real API server: Delete removes the session, Retain keeps it
 * with Ready=False/IdleTimeout and removes (for good) its Pod and Secret, and a fresh activity
 * annotation postpones collection.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import {
  createTestNamespace,
  kubeClients,
  predicate,
  waitFor,
  type KubeClients,
  type TestNamespace,
} from '../../../test-e2e/src/framework/index.js';
import { startOperator, type OperatorProcess } from './harness/operator-process.js';
import {
  Sessions,
  eventReasons,
  gone,
  readPod,
  readSecret,
  readyIs,
  runningReady,
  setPodStatus,
} from './harness/sessions.js';

let kube: KubeClients;
let ns: TestNamespace;
let op: OperatorProcess;
let sessions: Sessions;

beforeAll(async () => {
  kube = kubeClients();
  ns = await createTestNamespace(kube.core, { prefix: 'op-idle' });
  sessions = new Sessions(kube.custom, ns.name);
  op = startOperator({ namespace: ns.name });
  await op.waitForLog((l) => l.message === 'controller started');
});

afterAll(async () => {
  await op?.stop('SIGTERM');
  await ns?.cleanup();
});

async function readySession(name: string, spec: Parameters<Sessions['create']>[1]): Promise<number> {
  await sessions.create(name, spec);
  await waitFor(
    () => readPod(kube.core, ns.name, `sbs-${name}`),
    predicate(`pod sbs-${name}`, (p) => p !== undefined),
  );
  await setPodStatus(kube.core, ns.name, `sbs-${name}`, runningReady());
  await sessions.waitFor(name, readyIs('True'));
  return Date.now();
}

describe('idle collection', () => {
  it('Delete: the session is deleted about idleTimeoutSeconds after it became ready', async () => {
    const readyAt = await readySession('idle-delete', { idleTimeoutSeconds: 3, shutdownPolicy: 'Delete' });
    await sessions.waitFor('idle-delete', gone, 20_000);
    const after = Date.now() - readyAt;
    expect(after).toBeGreaterThanOrEqual(2_000);
    expect(after).toBeLessThan(8_000);
    await waitFor(
      async () => [
        await readPod(kube.core, ns.name, 'sbs-idle-delete'),
        await readSecret(kube.core, ns.name, 'sbs-idle-delete-token'),
      ],
      predicate('children garbage-collected', ([p, s]) => p === undefined && s === undefined),
      { timeoutMs: 60_000 },
    );
    await op.waitForLog((l) => l.message === 'collected session' && l.session === 'idle-delete');
    expect(op.messages('collected session').map((l) => [l.session, l.reason, l.policy])).toContainEqual([
      'idle-delete',
      'IdleTimeout',
      'Delete',
    ]);
  });

  it('Retain: the session stays with Ready=False/IdleTimeout, its Pod and Secret are deleted and not recreated', async () => {
    await readySession('idle-retain', { idleTimeoutSeconds: 3, shutdownPolicy: 'Retain' });
    const s = await sessions.waitFor('idle-retain', readyIs('False', 'IdleTimeout'), 20_000);
    expect(s?.status).toMatchObject({ phase: 'Terminated' });
    expect(s?.status?.podName).toBeUndefined();
    await waitFor(
      async () => [
        await readPod(kube.core, ns.name, 'sbs-idle-retain'),
        await readSecret(kube.core, ns.name, 'sbs-idle-retain-token'),
      ],
      predicate('children deleted', ([p, sec]) => p === undefined && sec === undefined),
    );
    // The deletions wake the reconcile again; nothing comes back.
    await new Promise((r) => setTimeout(r, 3_000));
    expect(await readPod(kube.core, ns.name, 'sbs-idle-retain')).toBeUndefined();
    expect(await readSecret(kube.core, ns.name, 'sbs-idle-retain-token')).toBeUndefined();
    expect(await sessions.get('idle-retain')).toBeDefined();
    expect(await eventReasons(kube.core, ns.name, 'idle-retain')).toContain('IdleTimeout');
  });

  it('a fresh activity annotation postpones collection', async () => {
    const readyAt = await readySession('busy', { idleTimeoutSeconds: 4, shutdownPolicy: 'Delete' });
    // The gateway reports activity every second for 10 s: more than twice the idle timeout.
    while (Date.now() - readyAt < 10_000) {
      await sessions.touch('busy');
      await new Promise((r) => setTimeout(r, 1_000));
    }
    const lastTouch = Date.now();
    const s = await sessions.get('busy');
    expect(s).toBeDefined();
    expect(s?.status?.lastActivityTime).toBeDefined();
    await sessions.waitFor('busy', gone, 20_000);
    const idleFor = Date.now() - lastTouch;
    expect(idleFor).toBeGreaterThanOrEqual(2_500);
    expect(idleFor).toBeLessThan(9_000);
  });
});

describe('lifetime collection', () => {
  it('collects an active session at maxLifetimeSeconds (status shows the deadline)', async () => {
    await sessions.create('short-lived', {
      idleTimeoutSeconds: 600,
      maxLifetimeSeconds: 60,
      shutdownPolicy: 'Retain',
    });
    const s = await sessions.waitFor(
      'short-lived',
      predicate('expiresAt set', (x) => Boolean(x?.status?.expiresAt)),
    );
    const created = Date.parse(String(s?.metadata.creationTimestamp));
    expect(Date.parse(String(s?.status?.expiresAt))).toBe(created + 60_000);
  });
});
