/**
 * Suspend and resume: spec.suspend deletes the Pod and keeps the Secret and workspace; clearing it
 * creates a Pod on the same workspace; shutdownPolicy Suspend sets spec.suspend at the idle
 * deadline (guarded by a resourceVersion precondition), and the lifetime still ends the session.
 */
import { beforeEach, describe, expect, it } from '@jest/globals';
import type { SandboxSession } from '@sandbox-platform/api';

import { reconcile } from '../../../src/controller/reconcile.js';
import type { ControllerDeps } from '../../../src/controller/scope.js';
import { FakeCluster } from '../../fakes/fake-cluster.js';
import { FakeClock, controllerDeps, type MemoryObserver } from '../../fakes/fakes.js';
import { podView, ready } from '../../fixtures/pods.js';
import { activeAt, session, withSpec } from '../../fixtures/sessions.js';

const KEY = { namespace: 'team-a', name: 'demo' };
const CLAIM = 'sbs-demo-workspace';

let cluster: FakeCluster;
let clock: FakeClock;
let deps: ControllerDeps & { observer: MemoryObserver };

beforeEach(() => {
  cluster = new FakeCluster();
  cluster.claimCreatedAt = '2030-01-01T00:00:00Z';
  clock = new FakeClock(Date.parse('2030-01-01T00:00:10Z'));
  deps = controllerDeps(cluster, clock);
});

const persistent = withSpec({ workspace: { sizeLimit: '1Gi', persistentVolumeClaim: {} } });

function readyCondition(s: SandboxSession | undefined): Record<string, unknown> | undefined {
  return s?.status?.conditions?.find((c) => c.type === 'Ready');
}

/** Provisions the session until Ready (claim bound, Pod ready). */
async function readySession(...mods: Parameters<typeof session>): Promise<void> {
  cluster.putSession(session(persistent, ...mods));
  await reconcile(KEY, deps);
  cluster.updateClaim('team-a', CLAIM, (v) => ({ ...v, phase: 'Bound', volumeName: 'pv-1' }));
  cluster.updatePod('team-a', 'sbs-demo', (v) => podView(ready, (p) => (p.metadata = v.metadata)));
  await reconcile(KEY, deps);
  expect(readyCondition(cluster.session())).toMatchObject({ status: 'True' });
  cluster.writes.length = 0;
  cluster.events.length = 0;
}

function setSuspend(value: boolean): void {
  cluster.touchSession('team-a', 'demo', (s) => (s.spec.suspend = value));
}

describe('spec.suspend', () => {
  it('deletes the Pod, keeps the Secret and the claim, reports Suspending until the Pod is gone, then Suspended', async () => {
    await readySession();
    setSuspend(true);
    await reconcile(KEY, deps);
    expect(cluster.writes).toEqual(['deletePod sbs-demo', 'patchStatus demo']);
    expect(cluster.secrets.has('team-a/sbs-demo-token')).toBe(true);
    expect(cluster.claims.has(`team-a/${CLAIM}`)).toBe(true);
    // The delete was sent in this reconcile: the Pod may still be terminating.
    const leaving = cluster.session()!;
    expect(readyCondition(leaving)).toMatchObject({ status: 'False', reason: 'Suspending' });
    expect(readyCondition(leaving)?.message).toMatch(
      /^Suspending \(spec.suspend is true\): Pod sbs-demo is being deleted\./,
    );
    expect(leaving.status?.phase).toBe('Suspended');
    // The next reconcile finds it gone.
    await reconcile(KEY, deps);
    const s = cluster.session()!;
    expect(readyCondition(s)).toMatchObject({ status: 'False', reason: 'Suspended' });
    expect(readyCondition(s)?.message).toMatch(
      /^Suspended \(spec.suspend is true\): its Pod is deleted; its Secret, token and workspace are kept/,
    );
    expect(s.status).toMatchObject({
      phase: 'Suspended',
      secretName: 'sbs-demo-token',
      workspaceClaimName: CLAIM,
    });
    expect(s.status?.podName).toBeUndefined();
    expect(s.status?.podIP).toBeUndefined();
    expect(s.status?.conditions?.map((c) => c.type)).toEqual(['Ready']);
    expect(cluster.events.map((e) => e.event)).toEqual([
      expect.objectContaining({ type: 'Normal', reason: 'Suspended', action: 'Suspend' }),
    ]);
    expect(deps.observer.reasons.get('team-a/demo')).toBe('Suspended');
  });

  it('stays suspended: once Suspended, a reconcile writes nothing and creates no Pod', async () => {
    await readySession();
    setSuspend(true);
    await reconcile(KEY, deps);
    await reconcile(KEY, deps);
    cluster.writes.length = 0;
    const result = await reconcile(KEY, deps);
    expect(cluster.writes).toEqual([]);
    // A suspended session has no idle deadline (and this one no lifetime): nothing to wake up for.
    expect(result.requeueAfterMs).toBeUndefined();
    expect(cluster.session()?.status?.expiresAt).toBeUndefined();
  });

  it('says what is lost when the workspace is an emptyDir', async () => {
    cluster.putSession(session(withSpec({ suspend: true })));
    await reconcile(KEY, deps);
    expect(cluster.writes).toEqual(['createSecret sbs-demo-token', 'patchStatus demo']);
    expect(readyCondition(cluster.session())?.message).toContain('(the emptyDir workspace is lost)');
  });

  it('a session created suspended gets its Secret and claim but no Pod, and no bind verdict', async () => {
    cluster.putSession(session(persistent, withSpec({ suspend: true })));
    await reconcile(KEY, deps);
    expect(cluster.writes).toEqual([
      'createSecret sbs-demo-token',
      `createClaim ${CLAIM}`,
      'patchStatus demo',
    ]);
    clock.advance(3_600_000);
    await reconcile(KEY, deps);
    expect(readyCondition(cluster.session())).toMatchObject({ reason: 'Suspended' });
  });

  it('leaves a Pod it does not own alone', async () => {
    cluster.putSession(session(persistent, withSpec({ suspend: true })));
    cluster.putPod(podView((p) => (p.metadata = { ...p.metadata, controller: undefined, uid: 'foreign' })));
    await reconcile(KEY, deps);
    expect(cluster.pods.get('team-a/sbs-demo')?.view.metadata.uid).toBe('foreign');
    expect(readyCondition(cluster.session())).toMatchObject({ reason: 'Suspended' });
  });

  it('retries a failed Pod delete (the next reconcile converges: no Pod left)', async () => {
    await readySession();
    setSuspend(true);
    cluster.failNext.set('deletePod', new Error('connection reset'));
    await expect(reconcile(KEY, deps)).rejects.toThrow();
    expect(cluster.pods.has('team-a/sbs-demo')).toBe(true);
    await reconcile(KEY, deps);
    expect(cluster.pods.has('team-a/sbs-demo')).toBe(false);
    expect(readyCondition(cluster.session())).toMatchObject({ reason: 'Suspending' });
    await reconcile(KEY, deps);
    expect(readyCondition(cluster.session())).toMatchObject({ reason: 'Suspended' });
  });

  it('says Suspending while a Pod it deleted is still terminating, and records one Suspended Event', async () => {
    await readySession();
    setSuspend(true);
    cluster.holdDeletes = true;
    await reconcile(KEY, deps);
    await reconcile(KEY, deps);
    expect(cluster.pods.get('team-a/sbs-demo')?.view.metadata.deletionTimestamp).toBeDefined();
    expect(readyCondition(cluster.session())).toMatchObject({ reason: 'Suspending' });
    cluster.holdDeletes = false;
    cluster.pods.delete('team-a/sbs-demo');
    await reconcile(KEY, deps);
    expect(readyCondition(cluster.session())).toMatchObject({ reason: 'Suspended' });
    expect(cluster.eventReasons()).toEqual(['Suspended']);
  });
});

describe('resume', () => {
  it('creates a Pod on the same claim and Secret, records Resumed and the resume time', async () => {
    await readySession();
    setSuspend(true);
    await reconcile(KEY, deps);
    clock.set('2030-01-01T01:00:00Z');
    setSuspend(false);
    cluster.writes.length = 0;
    cluster.events.length = 0;
    await reconcile(KEY, deps);
    expect(cluster.writes).toEqual(['createPod sbs-demo', 'patchStatus demo']);
    const s = cluster.session()!;
    expect(readyCondition(s)).toMatchObject({ reason: 'PodPending' });
    expect(s.status).toMatchObject({
      lastResumeTime: '2030-01-01T01:00:00Z',
      podName: 'sbs-demo',
      phase: 'Pending',
    });
    expect(cluster.eventReasons()).toEqual(['CreatedPod', 'Resumed']);
    cluster.updatePod('team-a', 'sbs-demo', (v) => podView(ready, (p) => (p.metadata = v.metadata)));
    await reconcile(KEY, deps);
    expect(readyCondition(cluster.session())).toMatchObject({ status: 'True' });
    // readyTime is the first Ready, set once.
    expect(cluster.session()?.status?.readyTime).toBe('2030-01-01T00:00:10Z');
  });

  it('starts the idle period again at the resume, though the last activity is older than the timeout', async () => {
    await readySession(
      withSpec({ idleTimeoutSeconds: 60, shutdownPolicy: 'Suspend' }),
      activeAt('2030-01-01T00:00:20Z'),
    );
    setSuspend(true);
    await reconcile(KEY, deps);
    clock.set('2030-01-01T01:00:00Z');
    setSuspend(false);
    const result = await reconcile(KEY, deps);
    expect(cluster.session()?.spec.suspend).toBe(false);
    expect(cluster.session()?.status?.expiresAt).toBe('2030-01-01T01:01:00Z');
    expect(result.requeueAfterMs).toBe(60_000);
  });
});

describe('shutdownPolicy Suspend', () => {
  const idleSuspend = withSpec({ idleTimeoutSeconds: 60, shutdownPolicy: 'Suspend' });

  it('at the idle deadline sets spec.suspend on the fresh resourceVersion, deletes the Pod, keeps the rest', async () => {
    await readySession(idleSuspend);
    clock.set('2030-01-01T00:01:10Z');
    await reconcile(KEY, deps);
    expect(cluster.writes).toEqual(['suspendSession demo', 'deletePod sbs-demo', 'patchStatus demo']);
    const s = cluster.session()!;
    expect(s.spec.suspend).toBe(true);
    expect(readyCondition(s)).toMatchObject({ status: 'False', reason: 'Suspending' });
    expect(readyCondition(s)?.message).toMatch(
      /^No activity for 60s; suspending \(shutdownPolicy Suspend\): Pod sbs-demo is being deleted/,
    );
    expect(cluster.secrets.has('team-a/sbs-demo-token')).toBe(true);
    expect(cluster.claims.has(`team-a/${CLAIM}`)).toBe(true);
    expect(deps.observer.collections).toEqual([
      { reason: 'IdleTimeout', policy: 'Suspend', secondsPastDeadline: 0 },
    ]);
    expect(cluster.events.map((e) => e.event)).toEqual([
      expect.objectContaining({ reason: 'Suspended', note: expect.stringMatching(/^No activity for 60s/) }),
    ]);
    // The cause stays in the message from Suspending to Suspended and while it stays suspended.
    clock.advance(1000);
    await reconcile(KEY, deps);
    expect(readyCondition(cluster.session())).toMatchObject({ reason: 'Suspended' });
    expect(readyCondition(cluster.session())?.message).toMatch(
      /^No activity for 60s; suspended \(shutdownPolicy/,
    );
    clock.advance(1000);
    await reconcile(KEY, deps);
    expect(readyCondition(cluster.session())?.message).toMatch(/^No activity for 60s; suspended/);
  });

  it('a racing activity stamp wins (409 on the spec patch): not suspended, requeued at once', async () => {
    await readySession(idleSuspend);
    clock.set('2030-01-01T00:01:10Z');
    const store = deps.sessions;
    deps = {
      ...deps,
      sessions: {
        ...store,
        suspend: async (key, rv) => {
          cluster.touchSession(
            'team-a',
            'demo',
            (s) => (s.metadata.annotations = { 'sandbox.dev/last-activity': '2030-01-01T00:01:09Z' }),
          );
          return store.suspend(key, rv);
        },
      },
    };
    const result = await reconcile(KEY, deps);
    expect(result.requeueAfterMs).toBe(0);
    expect(cluster.session()?.spec.suspend).toBeUndefined();
    expect(cluster.pods.has('team-a/sbs-demo')).toBe(true);
    expect(deps.observer.collections).toEqual([]);
  });

  it('the lifetime still ends a suspended session: it is deleted', async () => {
    await readySession(
      withSpec({ idleTimeoutSeconds: 60, shutdownPolicy: 'Suspend', maxLifetimeSeconds: 600 }),
    );
    clock.set('2030-01-01T00:01:10Z');
    const suspended = await reconcile(KEY, deps);
    expect(cluster.session()?.spec.suspend).toBe(true);
    expect(cluster.session()?.status?.expiresAt).toBe('2030-01-01T00:10:00Z');
    expect(suspended.requeueAfterMs).toBe(530_000);
    clock.set('2030-01-01T00:10:00Z');
    await reconcile(KEY, deps);
    expect(cluster.session()).toBeUndefined();
    expect(deps.observer.collections.at(-1)).toEqual({
      reason: 'LifetimeExceeded',
      policy: 'Suspend',
      secondsPastDeadline: 0,
    });
  });

  it('Delete with an explicitly suspended session: no idle collection while suspended', async () => {
    await readySession(withSpec({ idleTimeoutSeconds: 60 }));
    setSuspend(true);
    await reconcile(KEY, deps);
    clock.set('2030-01-01T05:00:00Z');
    await reconcile(KEY, deps);
    expect(cluster.session()).toBeDefined();
  });
});
