/**
 * Idle and lifetime collection on a real API server: Delete removes the session, Retain keeps it
 * with Ready=False/IdleTimeout (or LifetimeExceeded) and removes (for good) its Pod and Secret, and
 * a fresh activity annotation postpones collection. The lifetime sessions (60 s, the CRD's
 * minimum) are created first so that their minute overlaps the idle tests.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { predicate, waitFor } from '../../../test-e2e/src/framework/index.js';
import { OperatorFixture } from './harness/fixture.js';
import type { OperatorProcess } from './harness/operator-process.js';
import {
  type Sessions,
  eventReasons,
  gone,
  readPod,
  readSecret,
  ready,
  readyIs,
  runningReady,
  setPodStatus,
} from './harness/sessions.js';

const LIFETIME_S = 60;

const fx = new OperatorFixture('op-idle');
const { kube, ns, sessions } = fx;
let op: OperatorProcess;
/** Creation time and expiresAt (ms) of the lifetime sessions, created first. */
const lifetime: Record<string, { created: number; expiresAt: number }> = {};

beforeAll(async () => {
  await fx.setup();
  op = await fx.startController();
  await Promise.all(
    (['Delete', 'Retain'] as const).map(async (policy) => {
      const name = `lifetime-${policy.toLowerCase()}`;
      await readySession(name, {
        idleTimeoutSeconds: 600,
        maxLifetimeSeconds: LIFETIME_S,
        shutdownPolicy: policy,
      });
      const s = await sessions.waitFor(
        name,
        predicate('expiresAt set', (x) => Boolean(x?.status?.expiresAt)),
      );
      lifetime[name] = {
        created: Date.parse(String(s?.metadata.creationTimestamp)),
        expiresAt: Date.parse(String(s?.status?.expiresAt)),
      };
    }),
  );
});

/**
 * Collection happens at the deadline: not before it (creationTimestamp has 1 s precision, so
 * allow that), and within a few seconds after it (a loaded 2-core machine).
 */
function expectAtDeadline(at: number, deadline: number): void {
  expect(at).toBeGreaterThanOrEqual(deadline - 1_000);
  expect(at).toBeLessThan(deadline + 10_000);
}

afterAll(async () => {
  await fx.teardown('SIGTERM');
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
    // The idle clock starts at status.readyTime, which the operator wrote (1 s precision, so up
    // to 1 s before the Ready this test saw, which the watch delivered later still): the lower
    // bound is measured from it. Measured from readyAt it was 1970 ms in one CI run, not a bug.
    const readyTime = Date.parse(String((await sessions.get('idle-delete'))?.status?.readyTime));
    await sessions.waitFor('idle-delete', gone, 20_000);
    const goneAt = Date.now();
    expect(goneAt - readyTime).toBeGreaterThanOrEqual(3_000);
    expect(goneAt - readyAt).toBeLessThan(8_000);
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
    // Events trail the status (they are held while work is queued, at most 5 s): wait for it.
    await waitFor(
      () => eventReasons(kube.core, ns.name, 'idle-retain'),
      predicate('an IdleTimeout event', (r) => r.includes('IdleTimeout')),
    );
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
  // The two sessions were created (and made Ready) in beforeAll, so their minute runs while the
  // idle tests above run.
  it('Delete: the session is deleted at maxLifetimeSeconds, active or not', async () => {
    const { created, expiresAt } = lifetime['lifetime-delete']!;
    expect(expiresAt).toBe(created + LIFETIME_S * 1000);
    await sessions.waitFor('lifetime-delete', gone, LIFETIME_S * 1000 + 30_000);
    expectAtDeadline(Date.now(), expiresAt);
    await op.waitForLog((l) => l.message === 'collected session' && l.session === 'lifetime-delete');
    expect(op.messages('collected session').find((l) => l.session === 'lifetime-delete')).toMatchObject({
      reason: 'LifetimeExceeded',
      policy: 'Delete',
    });
  });

  it('Retain: the session ends Ready=False/LifetimeExceeded at maxLifetimeSeconds, its children deleted', async () => {
    const { expiresAt } = lifetime['lifetime-retain']!;
    const s = await sessions.waitFor(
      'lifetime-retain',
      readyIs('False', 'LifetimeExceeded'),
      Math.max(expiresAt - Date.now(), 0) + 30_000,
    );
    const transition = Date.parse(String(ready(s)?.lastTransitionTime));
    expectAtDeadline(transition, expiresAt);
    expect(s?.status).toMatchObject({ phase: 'Terminated' });
    expect(Date.parse(String(s?.status?.expiresAt))).toBe(expiresAt);
    await waitFor(
      async () => [
        await readPod(kube.core, ns.name, 'sbs-lifetime-retain'),
        await readSecret(kube.core, ns.name, 'sbs-lifetime-retain-token'),
      ],
      predicate('children deleted', ([p, sec]) => p === undefined && sec === undefined),
    );
    await waitFor(
      () => eventReasons(kube.core, ns.name, 'lifetime-retain'),
      predicate('a LifetimeExceeded event', (r) => r.includes('LifetimeExceeded')),
    );
  });
});
