import { beforeEach, describe, expect, it } from '@jest/globals';
import { deriveToken, type SandboxSession } from '@sandbox-platform/api';

import { NameConflictError } from '../../../src/controller/errors.js';
import { RECONCILE_ERROR_MESSAGE, reconcile } from '../../../src/controller/reconcile.js';
import type { ControllerDeps } from '../../../src/controller/scope.js';
import { MAX_DEFER_MS, SETTLE_MS } from '../../../src/controller/status-deferral.js';
import { FakeCluster } from '../../fakes/fake-cluster.js';
import { FakeClock, MASTER_KEY, controllerDeps, type MemoryObserver } from '../../fakes/fakes.js';
import { phase, podView, ready } from '../../fixtures/pods.js';
import { activeAt, session, uid, withSpec } from '../../fixtures/sessions.js';

const KEY = { namespace: 'team-a', name: 'demo' };

let cluster: FakeCluster;
let clock: FakeClock;
let deps: ControllerDeps & { observer: MemoryObserver };

beforeEach(() => {
  cluster = new FakeCluster();
  clock = new FakeClock(Date.parse('2030-01-01T00:00:10Z'));
  deps = controllerDeps(cluster, clock);
});

function ready_(): void {
  cluster.updatePod('team-a', 'sbs-demo', (v) => podView(ready, (p) => (p.metadata = v.metadata)));
}

function readyCondition(s: SandboxSession | undefined): Record<string, unknown> | undefined {
  return s?.status?.conditions?.find((c) => c.type === 'Ready');
}

describe('reconcile: provisioning', () => {
  it('creates the Secret, then the Pod, then writes status once', async () => {
    cluster.putSession(session());
    await reconcile(KEY, deps);
    expect(cluster.writes).toEqual(['createSecret sbs-demo-token', 'createPod sbs-demo', 'patchStatus demo']);
    const secret = cluster.secrets.get('team-a/sbs-demo-token')!.body;
    const token = deriveToken(MASTER_KEY, { namespace: 'team-a', name: 'demo', uid: 'uid-1' });
    expect(Buffer.from(secret.data!.token!, 'base64').toString()).toBe(token);
    expect(secret.metadata?.annotations).toEqual({ 'sandbox.dev/session-uid': 'uid-1' });
    expect(readyCondition(cluster.session())).toMatchObject({ status: 'False', reason: 'PodPending' });
    expect(cluster.session()?.status).toMatchObject({
      podName: 'sbs-demo',
      secretName: 'sbs-demo-token',
      phase: 'Pending',
    });
    // One Event for both children: the Pod's names the Secret created with it.
    expect(cluster.eventReasons()).toEqual(['CreatedPod']);
    expect(cluster.events[0]?.event.note).toBe('Created Pod sbs-demo and its token Secret sbs-demo-token');
  });

  it('is idempotent: a second reconcile writes nothing', async () => {
    cluster.putSession(session());
    await reconcile(KEY, deps);
    cluster.writes.length = 0;
    await reconcile(KEY, deps);
    expect(cluster.writes).toEqual([]);
  });

  it('reports Ready once the Pod is ready, with readyTime, an event and the create-to-Ready time', async () => {
    cluster.putSession(session());
    await reconcile(KEY, deps);
    ready_();
    clock.set('2030-01-01T00:00:42Z');
    await reconcile(KEY, deps);
    const s = cluster.session()!;
    expect(readyCondition(s)).toMatchObject({ status: 'True', reason: 'SandboxReady' });
    expect(s.status).toMatchObject({
      podIP: '198.18.0.5',
      readyTime: '2030-01-01T00:00:42Z',
      phase: 'Ready',
    });
    expect(cluster.eventReasons()).toContain('Ready');
    expect(deps.observer.firstReadySeconds).toEqual([42]);
    expect(deps.observer.reasons.get('team-a/demo')).toBe('SandboxReady');
  });

  it('requeues exactly at the idle deadline', async () => {
    cluster.putSession(session(withSpec({ idleTimeoutSeconds: 60 })));
    await reconcile(KEY, deps);
    ready_();
    const result = await reconcile(KEY, deps);
    expect(result.requeueAfterMs).toBe(60_000);
    expect(cluster.session()?.status?.expiresAt).toBe('2030-01-01T00:01:10Z');
  });

  it('creates a Pod again after it was deleted from outside', async () => {
    cluster.putSession(session());
    await reconcile(KEY, deps);
    cluster.collect('pod', 'team-a', 'sbs-demo');
    cluster.writes.length = 0;
    await reconcile(KEY, deps);
    expect(cluster.writes).toContain('createPod sbs-demo');
    expect(cluster.writes).not.toContain('createSecret sbs-demo-token');
  });

  it('deletes a Pod that ended (evicted) and reports PodFailed; the next reconcile creates it again', async () => {
    cluster.putSession(session());
    await reconcile(KEY, deps);
    cluster.updatePod('team-a', 'sbs-demo', (v) =>
      podView(phase('Failed', 'Evicted'), (p) => (p.metadata = v.metadata)),
    );
    cluster.writes.length = 0;
    const result = await reconcile(KEY, deps);
    expect(cluster.writes).toEqual(['deletePod sbs-demo', 'patchStatus demo']);
    expect(readyCondition(cluster.session())).toMatchObject({ reason: 'PodFailed' });
    expect(result.requeueAfterMs).toBe(5000);
    await reconcile(KEY, deps);
    expect(cluster.writes).toContain('createPod sbs-demo');
  });

  it('treats AlreadyExists from a lagging cache as "read it and check ownership"', async () => {
    cluster.putSession(session());
    await reconcile(KEY, deps);
    cluster.lagCache = true;
    cluster.podCache.clear();
    cluster.secretCache.clear();
    cluster.writes.length = 0;
    await reconcile(KEY, deps);
    expect(cluster.writes).toEqual([]);
  });

  it('never touches anything of a session that is being deleted, and forgets a gone one', async () => {
    cluster.putSession(session((s) => (s.metadata.deletionTimestamp = '2030-01-01T00:00:05Z')));
    await reconcile(KEY, deps);
    expect(cluster.writes).toEqual([]);
    deps.observer.reasons.set('team-a/gone', 'SandboxReady');
    await reconcile({ namespace: 'team-a', name: 'gone' }, deps);
    expect(deps.observer.reasons.has('team-a/gone')).toBe(false);
  });
});

describe('reconcile: the watch-fed session cache', () => {
  const cacheOf = (s: SandboxSession): Map<string, SandboxSession> =>
    new Map([['team-a/demo', structuredClone(s)]]);

  it('reads the session from the cache: no GET', async () => {
    cluster.putSession(session());
    cluster.sessionCache = cacheOf(cluster.session()!);
    await reconcile(KEY, deps);
    expect(cluster.writes).toEqual(['createSecret sbs-demo-token', 'createPod sbs-demo', 'patchStatus demo']);
    expect(cluster.sessionReads).toEqual([]);
    cluster.writes.length = 0;
    await reconcile(KEY, deps);
    expect(cluster.writes).toEqual([]);
  });

  it('a status computed from a stale cached session is refused, and the next run reads afresh: readyTime stays set-once', async () => {
    cluster.putSession(session());
    await reconcile(KEY, deps);
    const stale = structuredClone(cluster.session()!);
    ready_();
    clock.set('2030-01-01T00:00:42Z');
    await reconcile(KEY, deps);
    const events = cluster.eventReasons();
    cluster.sessionCache = cacheOf(stale);
    clock.set('2030-01-01T00:00:50Z');
    cluster.writes.length = 0;
    cluster.sessionReads.length = 0;
    const refused = await reconcile(KEY, deps);
    expect(refused.requeueAfterMs).toBe(0);
    expect(cluster.sessionReads).toEqual([]);
    expect(cluster.writes).toEqual([]);
    expect(cluster.session()?.status?.readyTime).toBe('2030-01-01T00:00:42Z');
    expect(cluster.eventReasons()).toEqual(events);
    await reconcile(KEY, deps);
    expect(cluster.sessionReads).toEqual(['demo']);
    expect(cluster.writes).toEqual([]);
    expect(cluster.session()?.status?.readyTime).toBe('2030-01-01T00:00:42Z');
    expect(cluster.eventReasons()).toEqual(events);
  });

  it('decides collection on a fresh read, not on the cache', async () => {
    cluster.putSession(session(withSpec({ idleTimeoutSeconds: 60 })));
    await reconcile(KEY, deps);
    ready_();
    await reconcile(KEY, deps);
    cluster.sessionCache = cacheOf(cluster.session()!);
    cluster.touchSession(
      'team-a',
      'demo',
      (s) => (s.metadata.annotations = { 'sandbox.dev/last-activity': '2030-01-01T00:01:05Z' }),
    );
    clock.set('2030-01-01T00:01:10Z');
    const result = await reconcile(KEY, deps);
    expect(cluster.session()).toBeDefined();
    expect(cluster.sessionReads.at(-1)).toBe('demo');
    expect(result.requeueAfterMs).toBe(55_000);
  });
});

describe('reconcile: bursts', () => {
  it('while other sessions are being worked on, creates the children and holds the progress-only status write', async () => {
    deps = { ...deps, otherWork: () => 5 };
    cluster.putSession(session());
    const first = await reconcile(KEY, deps);
    // Not polled: back at the hold's deadline at the latest (its Pod's changes come sooner).
    expect(first.requeueAfterMs).toBe(MAX_DEFER_MS);
    expect(cluster.writes).toEqual(['createSecret sbs-demo-token', 'createPod sbs-demo']);
    expect(cluster.eventReasons()).toEqual(['CreatedPod']);
    await reconcile(KEY, deps);
    expect(cluster.writes).toHaveLength(2);
    // Nothing else queued, but within SETTLE_MS of the last busy moment: still a burst.
    deps = { ...deps, otherWork: () => 0 };
    clock.advance(SETTLE_MS - 1);
    await reconcile(KEY, deps);
    expect(cluster.writes).toHaveLength(2);
    // The burst passed: the status write is made.
    clock.advance(1);
    await reconcile(KEY, deps);
    expect(cluster.writes).toEqual(['createSecret sbs-demo-token', 'createPod sbs-demo', 'patchStatus demo']);
    expect(readyCondition(cluster.session())).toMatchObject({ status: 'False', reason: 'PodPending' });
    expect(deps.statusDeferral.size).toBe(0);
    // Counted by the Ready reason written (sandbox_operator_status_writes_total).
    expect(deps.observer.statusWrites).toEqual(['PodPending']);
  });

  it('makes a held write anyway once it waited MAX_DEFER_MS, however busy', async () => {
    deps = { ...deps, otherWork: () => 5 };
    cluster.putSession(session());
    await reconcile(KEY, deps);
    clock.advance(MAX_DEFER_MS - 1);
    await reconcile(KEY, deps);
    expect(cluster.writes).not.toContain('patchStatus demo');
    clock.advance(1);
    await reconcile(KEY, deps);
    expect(cluster.writes.at(-1)).toBe('patchStatus demo');
  });

  it('makes a held write once the queue drained (release), even if work arrived again meanwhile', async () => {
    deps = { ...deps, otherWork: () => 5 };
    cluster.putSession(session());
    await reconcile(KEY, deps);
    clock.advance(1000);
    expect((await reconcile(KEY, deps)).requeueAfterMs).toBe(MAX_DEFER_MS - 1000);
    expect(deps.statusDeferral.release()).toEqual(['team-a/demo']);
    await reconcile(KEY, deps);
    expect(cluster.writes.at(-1)).toBe('patchStatus demo');
    expect(deps.statusDeferral.size).toBe(0);
  });

  it('writes Ready at once, however busy', async () => {
    deps = { ...deps, otherWork: () => 5 };
    cluster.putSession(session());
    await reconcile(KEY, deps);
    ready_();
    await reconcile(KEY, deps);
    expect(cluster.writes.at(-1)).toBe('patchStatus demo');
    expect(readyCondition(cluster.session())).toMatchObject({ status: 'True' });
  });

  it('writes status at once when a create failed, however busy', async () => {
    deps = { ...deps, otherWork: () => 5 };
    cluster.putSession(session());
    cluster.failNext.set('createPod', new Error('boom'));
    await expect(reconcile(KEY, deps)).rejects.toThrow('create Pod sbs-demo');
    expect(cluster.writes).toEqual(['createSecret sbs-demo-token', 'patchStatus demo']);
  });
});

describe('reconcile: ownership', () => {
  const foreignMeta = { namespace: 'team-a', uid: 'x', resourceVersion: '1' };

  it('never adopts a foreign Secret: NameConflict, a Warning event, no Pod, the Secret untouched', async () => {
    cluster.putSession(session());
    cluster.putSecret({ metadata: { ...foreignMeta, name: 'sbs-demo-token' } });
    await expect(reconcile(KEY, deps)).rejects.toBeInstanceOf(NameConflictError);
    expect(cluster.writes).toEqual(['patchStatus demo']);
    expect(readyCondition(cluster.session())).toMatchObject({ reason: 'NameConflict' });
    expect(String(readyCondition(cluster.session())?.message)).toMatch(
      /Secret sbs-demo-token exists and is not owned/,
    );
    expect(cluster.events.map((e) => [e.event.type, e.event.reason])).toEqual([['Warning', 'NameConflict']]);
    expect(cluster.secrets.has('team-a/sbs-demo-token')).toBe(true);
  });

  it('never adopts a foreign Pod', async () => {
    cluster.putSession(session());
    cluster.putPod(podView((p) => (p.metadata = { ...p.metadata, controller: undefined })));
    await expect(reconcile(KEY, deps)).rejects.toBeInstanceOf(NameConflictError);
    expect(cluster.writes).toEqual(['createSecret sbs-demo-token', 'patchStatus demo']);
    expect(readyCondition(cluster.session())).toMatchObject({ reason: 'NameConflict' });
  });

  it('does not reuse the Secret of a previous session with the same name; waits for it to go, then creates its own', async () => {
    const previous = {
      apiVersion: 'sandbox.dev/v1alpha1',
      kind: 'SandboxSession',
      name: 'demo',
      uid: 'uid-0',
    };
    cluster.putSession(session(uid('uid-2')));
    cluster.putSecret({
      metadata: { ...foreignMeta, name: 'sbs-demo-token', controller: previous },
      sessionUID: 'uid-0',
    });
    cluster.putPod(podView(ready, (p) => (p.metadata = { ...p.metadata, controller: previous })));
    const first = await reconcile(KEY, deps);
    expect(first.requeueAfterMs).toBe(5000);
    expect(cluster.writes).toEqual(['patchStatus demo']);
    expect(readyCondition(cluster.session())).toMatchObject({ status: 'False', reason: 'Creating' });
    expect(String(readyCondition(cluster.session())?.message)).toMatch(/previous SandboxSession/);
    cluster.collect('secret', 'team-a', 'sbs-demo-token');
    await reconcile(KEY, deps);
    const token = cluster.secrets.get('team-a/sbs-demo-token')!.body.data!.token!;
    expect(Buffer.from(token, 'base64').toString()).toBe(
      deriveToken(MASTER_KEY, { namespace: 'team-a', name: 'demo', uid: 'uid-2' }),
    );
    expect(cluster.writes).not.toContain('createPod sbs-demo');
    expect(String(readyCondition(cluster.session())?.message)).toMatch(
      /Pod sbs-demo of a previous SandboxSession/,
    );
  });

  it('replaces an owned Secret whose session-uid annotation was tampered with', async () => {
    cluster.putSession(session());
    const owner = { apiVersion: 'sandbox.dev/v1alpha1', kind: 'SandboxSession', name: 'demo', uid: 'uid-1' };
    cluster.putSecret({
      metadata: { ...foreignMeta, name: 'sbs-demo-token', controller: owner },
      sessionUID: 'evil',
    });
    await reconcile(KEY, deps);
    expect(cluster.writes).toEqual(['deleteSecret sbs-demo-token', 'patchStatus demo']);
  });
});

describe('reconcile: errors', () => {
  it('writes ReconcileError with a generic message and rethrows with context', async () => {
    cluster.putSession(session());
    cluster.failNext.set('createPod', Object.assign(new Error('boom'), { code: 500 }));
    const err = await reconcile(KEY, deps).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toBe('create Pod sbs-demo');
    expect(((err as Error).cause as Error).message).toBe('boom');
    expect(readyCondition(cluster.session())).toMatchObject({
      reason: 'ReconcileError',
      message: RECONCILE_ERROR_MESSAGE,
    });
    expect(cluster.eventReasons()).toEqual(['CreatedSecret', 'ReconcileError']);
  });

  it('fails when the status write fails, so the queue retries', async () => {
    cluster.putSession(session());
    cluster.failNext.set('patchStatus', new Error('etcd down'));
    await expect(reconcile(KEY, deps)).rejects.toThrow('write status');
  });
});

describe('reconcile: idle and lifetime collection', () => {
  async function readySession(...mods: Parameters<typeof session>): Promise<void> {
    cluster.putSession(session(withSpec({ idleTimeoutSeconds: 60 }), ...mods));
    await reconcile(KEY, deps);
    ready_();
    await reconcile(KEY, deps);
  }

  it('Delete: deletes the session with a UID and resourceVersion precondition at the deadline', async () => {
    await readySession();
    clock.set('2030-01-01T00:01:10Z');
    await reconcile(KEY, deps);
    expect(cluster.session()).toBeUndefined();
    expect(deps.observer.collections).toEqual([
      { reason: 'IdleTimeout', policy: 'Delete', secondsPastDeadline: 0 },
    ]);
    expect(cluster.events.at(-1)?.event).toMatchObject({
      type: 'Normal',
      reason: 'IdleTimeout',
      action: 'Delete',
    });
  });

  it('reports how long after its deadline a session was collected (time-to-collect)', async () => {
    await readySession();
    clock.set('2030-01-01T00:01:25Z');
    await reconcile(KEY, deps);
    expect(cluster.session()).toBeUndefined();
    expect(deps.observer.collections).toEqual([
      { reason: 'IdleTimeout', policy: 'Delete', secondsPastDeadline: 15 },
    ]);
  });

  it('a fresh activity stamp seen on the re-read postpones collection', async () => {
    await readySession();
    clock.set('2030-01-01T00:01:10Z');
    cluster.onGet = (_key, n) => {
      // The gateway patches activity between the reconcile's first read and the re-read.
      if (n % 2 === 0)
        cluster.touchSession('team-a', 'demo', (s) =>
          Object.assign(
            s,
            session(
              activeAt('2030-01-01T00:01:05Z'),
              withSpec({ idleTimeoutSeconds: 60 }),
              (x) => (x.metadata.resourceVersion = s.metadata.resourceVersion),
            ),
          ),
        );
    };
    const result = await reconcile(KEY, deps);
    expect(cluster.session()).toBeDefined();
    expect(result.requeueAfterMs).toBe(55_000);
    expect(cluster.session()?.status?.lastActivityTime).toBe('2030-01-01T00:01:05Z');
  });

  it('a racing write between the re-read and the delete wins (409): the session stays and is requeued at once', async () => {
    await readySession();
    clock.set('2030-01-01T00:01:10Z');
    const store = deps.sessions;
    deps = {
      ...deps,
      sessions: {
        ...store,
        delete: async (key, pre) => {
          cluster.touchSession('team-a', 'demo', () => undefined);
          return store.delete(key, pre);
        },
      },
    };
    const result = await reconcile(KEY, deps);
    expect(cluster.session()).toBeDefined();
    expect(result.requeueAfterMs).toBe(0);
    expect(deps.observer.collections).toEqual([]);
  });

  it('Retain: commits the collected status with a precondition, deletes the children, never recreates them', async () => {
    await readySession(withSpec({ shutdownPolicy: 'Retain', idleTimeoutSeconds: 60 }));
    clock.set('2030-01-01T00:01:10Z');
    cluster.writes.length = 0;
    await reconcile(KEY, deps);
    expect(cluster.writes).toEqual(['patchStatus demo', 'deletePod sbs-demo', 'deleteSecret sbs-demo-token']);
    const s = cluster.session()!;
    expect(readyCondition(s)).toMatchObject({ status: 'False', reason: 'IdleTimeout' });
    expect(s.status).toMatchObject({ phase: 'Terminated', expiresAt: '2030-01-01T00:01:10Z' });
    expect(s.status?.podName).toBeUndefined();
    expect(cluster.events.at(-1)?.event).toMatchObject({
      type: 'Normal',
      reason: 'IdleTimeout',
      action: 'Collect',
    });
    cluster.writes.length = 0;
    clock.advance(3_600_000);
    await reconcile(KEY, deps);
    expect(cluster.writes).toEqual([]);
    expect(deps.observer.collections).toEqual([
      { reason: 'IdleTimeout', policy: 'Retain', secondsPastDeadline: 0 },
    ]);
  });

  it('collects for lifetime even while active', async () => {
    await readySession(withSpec({ idleTimeoutSeconds: 600, maxLifetimeSeconds: 60 }));
    clock.set('2030-01-01T00:01:00Z');
    cluster.touchSession(
      'team-a',
      'demo',
      (s) => (s.metadata.annotations = { 'sandbox.dev/last-activity': '2030-01-01T00:00:59Z' }),
    );
    await reconcile(KEY, deps);
    expect(cluster.session()).toBeUndefined();
    expect(deps.observer.collections).toEqual([
      { reason: 'LifetimeExceeded', policy: 'Delete', secondsPastDeadline: 0 },
    ]);
  });

  it('collects a session that never became ready, from its creation time', async () => {
    cluster.putSession(session(withSpec({ idleTimeoutSeconds: 60 })));
    await reconcile(KEY, deps);
    clock.set('2030-01-01T00:01:00Z');
    await reconcile(KEY, deps);
    expect(cluster.session()).toBeUndefined();
  });
});
