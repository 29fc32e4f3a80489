/**
 * Idle and lifetime collection on a real API server: Delete removes the session, Retain keeps it
 * with Ready=False/IdleTimeout (or LifetimeExceeded) and removes (for good) its Pod and Secret, and
 * a fresh activity annotation postpones collection. The lifetime sessions (60 s, the CRD's
 * minimum) are created first so that their minute overlaps the idle tests.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { predicate, waitFor } from '@sandbox-platform/test-support';
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
 * The operator acted on the deadline, not before it: `at` is a time it recorded (creationTimestamp
 * and readyTime have 1 s precision, so allow that). How soon after is not asserted: speed is for
 * benchmarks; the waits' timeouts are safety nets.
 */
function expectNotBefore(at: number, deadline: number): void {
  expect(at).toBeGreaterThanOrEqual(deadline - 1_000);
}

/** When the operator logged that it collected the session (its own clock). */
function collectedAt(session: string): number {
  const line = op.messages('collected session').find((l) => l.session === session);
  return Date.parse(String(line?.time));
}

afterAll(async () => {
  await fx.teardown('SIGTERM');
});

async function readySession(name: string, spec: Parameters<Sessions['create']>[1]): Promise<void> {
  await sessions.create(name, spec);
  await waitFor(
    () => readPod(kube.core, ns.name, `sbs-${name}`),
    predicate(`pod sbs-${name}`, (p) => p !== undefined),
  );
  await setPodStatus(kube.core, ns.name, `sbs-${name}`, runningReady());
  await sessions.waitFor(name, readyIs('True'));
}

describe('idle collection', () => {
  it('Delete: the session is deleted once idleTimeoutSeconds have passed since it became ready', async () => {
    await readySession('idle-delete', { idleTimeoutSeconds: 3, shutdownPolicy: 'Delete' });
    // The idle clock starts at status.readyTime, which the operator wrote.
    const readyTime = Date.parse(String((await sessions.get('idle-delete'))?.status?.readyTime));
    await sessions.waitFor('idle-delete', gone, 20_000);
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
    expectNotBefore(collectedAt('idle-delete'), readyTime + 3_000);
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
    expect(await sessions.get('idle-retain')).toMatchObject({ metadata: { name: 'idle-retain' } });
    // Events trail the status (they are held while work is queued, at most 5 s): wait for it.
    await waitFor(
      () => eventReasons(kube.core, ns.name, 'idle-retain'),
      predicate('an IdleTimeout event', (r) => r.includes('IdleTimeout')),
    );
  });

  it('a fresh activity annotation postpones collection', async () => {
    await readySession('busy', { idleTimeoutSeconds: 4, shutdownPolicy: 'Delete' });
    const readyTime = Date.parse(String((await sessions.get('busy'))?.status?.readyTime));
    // The gateway reports activity every second, past twice the idle timeout after readyTime.
    let lastTouch = 0;
    while (lastTouch < readyTime + 10_000) {
      await sessions.touch('busy');
      lastTouch = Date.now();
      await new Promise((r) => setTimeout(r, 1_000));
    }
    // Still there, 10 s after Ready with a 4 s idle timeout: the touches postponed collection.
    const s = await sessions.get('busy');
    expect(s?.metadata.name).toBe('busy');
    expect(Date.parse(String(s?.status?.lastActivityTime))).toBeGreaterThan(readyTime + 4_000);
    expect(op.messages('collected session').filter((l) => l.session === 'busy')).toEqual([]);
    // Then, idle, it is collected for IdleTimeout, counted from its last activity.
    await sessions.waitFor('busy', gone, 20_000);
    await op.waitForLog((l) => l.message === 'collected session' && l.session === 'busy');
    expect(op.messages('collected session').find((l) => l.session === 'busy')).toMatchObject({
      reason: 'IdleTimeout',
    });
    expectNotBefore(collectedAt('busy'), Date.parse(String(s?.status?.lastActivityTime)) + 4_000);
  });
});

describe('lifetime collection', () => {
  // The two sessions were created (and made Ready) in beforeAll, so their minute runs while the
  // idle tests above run.
  it('Delete: the session is deleted at maxLifetimeSeconds, active or not', async () => {
    const { created, expiresAt } = lifetime['lifetime-delete']!;
    expect(expiresAt).toBe(created + LIFETIME_S * 1000);
    await sessions.waitFor('lifetime-delete', gone, LIFETIME_S * 1000 + 30_000);
    await op.waitForLog((l) => l.message === 'collected session' && l.session === 'lifetime-delete');
    expect(op.messages('collected session').find((l) => l.session === 'lifetime-delete')).toMatchObject({
      reason: 'LifetimeExceeded',
      policy: 'Delete',
    });
    expectNotBefore(collectedAt('lifetime-delete'), expiresAt);
  });

  it('Retain: the session ends Ready=False/LifetimeExceeded at maxLifetimeSeconds, its children deleted', async () => {
    const { expiresAt } = lifetime['lifetime-retain']!;
    const s = await sessions.waitFor(
      'lifetime-retain',
      readyIs('False', 'LifetimeExceeded'),
      Math.max(expiresAt - Date.now(), 0) + 30_000,
    );
    const transition = Date.parse(String(ready(s)?.lastTransitionTime));
    expectNotBefore(transition, expiresAt);
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
