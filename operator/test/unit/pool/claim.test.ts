/**
 * The claim phase through the real reconcile driver, over the fake cluster and the fake pool world
 * (docs/adr/0016): a warm Pod is bound instead of a Pod created; none available is cold from the
 * template; a bound Pod never goes to a second session; conflicts and failed binds move on; a claim
 * cut short by a crash is finished or discarded; a pooled session's Pod is handled like any other.
 */
import { beforeEach, describe, expect, it } from '@jest/globals';
import { deriveToken } from '@sandbox-platform/api';

import { reconcile } from '../../../src/controller/reconcile.js';
import type { ControllerDeps } from '../../../src/controller/scope.js';
import type { PoolPodOptions } from '../../../src/pool/pool-pod.js';
import { RefillHold } from '../../../src/pool/refill-hold.js';
import { FakeCluster } from '../../fakes/fake-cluster.js';
import { FakePools } from '../../fakes/fake-pools.js';
import { FakeClock, MASTER_KEY, controllerDeps } from '../../fakes/fakes.js';
import { session, uid, named, withSpec } from '../../fixtures/sessions.js';

let cluster: FakeCluster;
let pools: FakePools;
let deps: ControllerDeps;
let opts: PoolPodOptions;

beforeEach(() => {
  cluster = new FakeCluster();
  pools = new FakePools(cluster);
  const base = controllerDeps(cluster, new FakeClock(Date.parse('2030-01-01T00:00:10Z')));
  opts = pools.podOptions(base.podOptions);
  deps = { ...base, pools: pools.claims(opts) };
});

const poolRef = (name: string) => withSpec({ poolRef: { name } });
const key = (name = 'demo') => ({ namespace: 'team-a', name });
const tokenOf = (name: string, u: string) => deriveToken(MASTER_KEY, { namespace: 'team-a', name, uid: u });
const ready = (s: ReturnType<typeof cluster.session>) =>
  s?.status?.conditions?.find((c) => c.type === 'Ready');
/** Lets the pending promises run until `done()` holds (at most 100 turns of the event loop). */
async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 100 && !done(); i++) await new Promise((r) => setImmediate(r));
  if (!done()) throw new Error('the condition never held');
}
const claims = (result: string) =>
  pools.metrics.claims.get().then((m) => m.values.find((v) => v.labels.result === result)?.value ?? 0);

describe('a session naming a pool with an available warm Pod', () => {
  it('is bound to it: no Pod created, status names the warm Pod, Ready at once, token handed over', async () => {
    const pool = pools.putPool('warm');
    pools.putWarm(pool, 'warm-aaaaaaaaaa', opts);
    cluster.putSession(session(poolRef('warm')));
    await reconcile(key(), deps);
    expect(cluster.writes).toEqual(['createSecret sbs-demo-token', 'patchStatus demo']);
    expect(pools.ops).toEqual(['claimPod warm-aaaaaaaaaa -> demo', 'bind warm-aaaaaaaaaa']);
    const s = cluster.session()!;
    expect(s.status).toMatchObject({ podName: 'warm-aaaaaaaaaa', podIP: '198.18.1.1', phase: 'Ready' });
    expect(ready(s)).toMatchObject({ status: 'True', reason: 'SandboxReady' });
    expect(pools.bound.get('warm-aaaaaaaaaa')).toMatchObject({
      session: { namespace: 'team-a', name: 'demo', uid: 'uid-1' },
      token: tokenOf('demo', 'uid-1'),
      pod: { name: 'warm-aaaaaaaaaa', uid: 'pod-warm-aaaaaaaaaa' },
    });
    // Ready is written as the agent accepts the bind, before the claim is recorded (ADR 0016, "60 ms").
    expect(cluster.eventReasons()).toEqual(['Ready', 'BoundFromPool']);
    expect(cluster.events[1]?.event.note).toBe(
      'Bound warm Pod warm-aaaaaaaaaa of SandboxPool warm; created its token Secret sbs-demo-token',
    );
    expect(pools.woken).toEqual(['team-a/warm']);
    expect(await claims('hit')).toBe(1);
  });

  it('writes Ready once its agent accepted the bind, while the claim patch is still unanswered, and only once', async () => {
    const pool = pools.putPool('warm');
    pools.putWarm(pool, 'warm-aaaaaaaaaa', opts);
    cluster.putSession(session(poolRef('warm'), withSpec({ idleTimeoutSeconds: 600 })));
    let answer!: () => void;
    pools.claimAnswer = new Promise((resolve) => (answer = resolve));
    const done = reconcile(key(), deps);
    await until(() => cluster.writes.includes('patchStatus demo'));
    expect(pools.ops).toEqual(['bind warm-aaaaaaaaaa']);
    expect(cluster.session()?.status).toMatchObject({
      podName: 'warm-aaaaaaaaaa',
      podIP: '198.18.1.1',
      phase: 'Ready',
      expiresAt: '2030-01-01T00:10:10Z',
    });
    answer();
    await done;
    expect(pools.ops).toEqual(['bind warm-aaaaaaaaaa', 'claimPod warm-aaaaaaaaaa -> demo']);
    expect(cluster.writes.filter((w) => w.startsWith('patchStatus'))).toEqual(['patchStatus demo']);
  });

  it('corrects the early Ready when the claim patch then loses (the Pod deleted, the next one bound)', async () => {
    const pool = pools.putPool('warm', { replicas: 2 });
    pools.putWarm(pool, 'warm-aaaaaaaaaa', opts);
    pools.putWarm(pool, 'warm-bbbbbbbbbb', opts);
    pools.conflictOnClaim.add('warm-aaaaaaaaaa');
    cluster.putSession(session(poolRef('warm')));
    await reconcile(key(), deps);
    expect(cluster.session()?.status).toMatchObject({ podName: 'warm-bbbbbbbbbb', phase: 'Ready' });
    expect(pools.ops).toContain('deletePod warm-aaaaaaaaaa');
  });

  it('does nothing more on the next reconcile (the status records the Pod)', async () => {
    const pool = pools.putPool('warm');
    pools.putWarm(pool, 'warm-aaaaaaaaaa', opts);
    cluster.putSession(session(poolRef('warm')));
    await reconcile(key(), deps);
    pools.ops.length = 0;
    cluster.writes.length = 0;
    await reconcile(key(), deps);
    expect([cluster.writes, pools.ops]).toEqual([[], []]);
  });
});

describe('the refill while a claim is in flight', () => {
  it("holds the pool's reconcile from the claim's start through its bind, and for the settle time after", async () => {
    let t = 1000;
    const hold = new RefillHold(150, 1000);
    deps = { ...deps, pools: pools.claims(opts, hold, () => t) };
    const pool = pools.putPool('warm');
    pools.putWarm(pool, 'warm-aaaaaaaaaa', opts);
    cluster.putSession(session(poolRef('warm')));
    const duringBind: number[] = [];
    pools.onBind = () => {
      t = 1040;
      duringBind.push(hold.holdMs('team-a/warm', t));
    };
    expect(hold.holdMs('team-a/warm', t)).toBe(0);
    await reconcile(key(), deps);
    expect(pools.ops).toEqual(['claimPod warm-aaaaaaaaaa -> demo', 'bind warm-aaaaaaaaaa']);
    expect(duringBind).toEqual([150]);
    // The claim ended at 1040: the pool waits until 1190.
    expect(hold.holdMs('team-a/warm', 1100)).toBe(90);
    expect(hold.holdMs('team-a/warm', 1190)).toBe(0);
  });

  it('releases the pool when no warm Pod could be bound (the session went cold)', async () => {
    const hold = new RefillHold(150, 1000);
    deps = { ...deps, pools: pools.claims(opts, hold, () => 5000) };
    const pool = pools.putPool('warm');
    pools.putWarm(pool, 'warm-aaaaaaaaaa', opts);
    pools.behaviour.set('warm-aaaaaaaaaa', 'silent');
    cluster.putSession(session(poolRef('warm')));
    await reconcile(key(), deps);
    expect(cluster.session()?.status?.podName).toBe('sbs-demo');
    expect(hold.holdMs('team-a/warm', 5150)).toBe(0);
  });
});

describe('a bound Pod', () => {
  it('never goes to a second session: with one warm Pod, the second session is created cold', async () => {
    const pool = pools.putPool('warm', { template: { image: 'tmpl:1' } });
    pools.putWarm(pool, 'warm-aaaaaaaaaa', opts);
    cluster.putSession(session(poolRef('warm')));
    cluster.putSession(session(named('other'), uid('uid-2'), poolRef('warm')));
    await reconcile(key(), deps);
    await reconcile(key('other'), deps);
    expect(cluster.session('team-a', 'other')?.status?.podName).toBe('sbs-other');
    expect(cluster.pods.get('team-a/sbs-other')?.body.spec?.containers[0]?.image).toBe('tmpl:1');
    expect(pools.ops.filter((o) => o.startsWith('claimPod'))).toEqual(['claimPod warm-aaaaaaaaaa -> demo']);
    expect(cluster.eventReasons()).toContain('PoolEmpty');
    expect(await claims('miss')).toBe(1);
  });

  it('that ended is deleted with its session UID precondition, and the session takes another warm Pod', async () => {
    const pool = pools.putPool('warm');
    pools.putWarm(pool, 'warm-aaaaaaaaaa', opts);
    cluster.putSession(session(poolRef('warm')));
    await reconcile(key(), deps);
    const bound = pools.index.pod('team-a', 'warm-aaaaaaaaaa')!;
    pools.store({ ...bound, phase: 'Failed', metadata: { ...bound.metadata, resourceVersion: '99999' } });
    await reconcile(key(), deps);
    expect(cluster.writes).toContain('deletePod warm-aaaaaaaaaa');
    pools.index.applyPod(bound, 'deleted');
    pools.putWarm(pool, 'warm-bbbbbbbbbb', opts);
    await reconcile(key(), deps);
    expect(cluster.session()?.status?.podName).toBe('warm-bbbbbbbbbb');
  });

  it('is deleted when its session is suspended', async () => {
    const pool = pools.putPool('warm');
    pools.putWarm(pool, 'warm-aaaaaaaaaa', opts);
    cluster.putSession(session(poolRef('warm')));
    await reconcile(key(), deps);
    cluster.touchSession('team-a', 'demo', (s) => (s.spec.suspend = true));
    await reconcile(key(), deps);
    expect(cluster.writes).toContain('deletePod warm-aaaaaaaaaa');
  });
});

describe('claims that do not go through', () => {
  it('moves on to the next warm Pod after a conflict (claimed or deleted by someone else)', async () => {
    const pool = pools.putPool('warm', { replicas: 2 });
    pools.putWarm(pool, 'warm-aaaaaaaaaa', opts);
    pools.putWarm(pool, 'warm-bbbbbbbbbb', opts);
    pools.conflictOnClaim.add('warm-aaaaaaaaaa');
    cluster.putSession(session(poolRef('warm')));
    await reconcile(key(), deps);
    expect(cluster.session()?.status?.podName).toBe('warm-bbbbbbbbbb');
    expect(await claims('conflict')).toBe(1);
  });

  it('deletes a Pod whose bind went through while its claim patch lost (it serves this token now)', async () => {
    const pool = pools.putPool('warm', { replicas: 2 });
    pools.putWarm(pool, 'warm-aaaaaaaaaa', opts);
    pools.putWarm(pool, 'warm-bbbbbbbbbb', opts);
    pools.conflictOnClaim.add('warm-aaaaaaaaaa');
    cluster.putSession(session(poolRef('warm')));
    await reconcile(key(), deps);
    expect(pools.ops.slice(0, 3)).toEqual([
      'claimPod warm-aaaaaaaaaa conflict',
      'bind warm-aaaaaaaaaa',
      'deletePod warm-aaaaaaaaaa',
    ]);
    expect(cluster.session()?.status?.podName).toBe('warm-bbbbbbbbbb');
  });

  it('leaves alone a Pod whose claim patch lost and whose agent refused the bind (another claim won it)', async () => {
    const pool = pools.putPool('warm', { replicas: 2 });
    pools.putWarm(pool, 'warm-aaaaaaaaaa', opts);
    pools.putWarm(pool, 'warm-bbbbbbbbbb', opts);
    pools.conflictOnClaim.add('warm-aaaaaaaaaa');
    pools.behaviour.set('warm-aaaaaaaaaa', 'refuse');
    cluster.putSession(session(poolRef('warm')));
    await reconcile(key(), deps);
    expect(pools.ops.filter((o) => o.includes('warm-aaaaaaaaaa'))).toEqual([
      'claimPod warm-aaaaaaaaaa conflict',
      'bind warm-aaaaaaaaaa',
    ]);
    expect(cluster.session()?.status?.podName).toBe('warm-bbbbbbbbbb');
  });

  it('deletes a claimed Pod whose bind fails (never back to the pool) and tries the next', async () => {
    const pool = pools.putPool('warm', { replicas: 2 });
    pools.putWarm(pool, 'warm-aaaaaaaaaa', opts);
    pools.putWarm(pool, 'warm-bbbbbbbbbb', opts);
    pools.behaviour.set('warm-aaaaaaaaaa', 'refuse');
    cluster.putSession(session(poolRef('warm')));
    await reconcile(key(), deps);
    expect(pools.ops).toEqual([
      'claimPod warm-aaaaaaaaaa -> demo',
      'bind warm-aaaaaaaaaa',
      'deletePod warm-aaaaaaaaaa',
      'claimPod warm-bbbbbbbbbb -> demo',
      'bind warm-bbbbbbbbbb',
    ]);
    expect(cluster.session()?.status?.podName).toBe('warm-bbbbbbbbbb');
    expect(cluster.eventReasons()).toContain('BindFailed');
    expect(await claims('bind_failed')).toBe(1);
  });

  it('creates the session cold from the template after three failed binds', async () => {
    const pool = pools.putPool('warm', { replicas: 3, template: { image: 'tmpl:1' } });
    for (const n of ['a', 'b', 'c']) {
      pools.putWarm(pool, `warm-${n.repeat(10)}`, opts);
      pools.behaviour.set(`warm-${n.repeat(10)}`, 'silent');
    }
    cluster.putSession(session(poolRef('warm')));
    await reconcile(key(), deps);
    expect(cluster.session()?.status?.podName).toBe('sbs-demo');
    expect(pools.ops.filter((o) => o.startsWith('deletePod'))).toHaveLength(3);
  });

  it('ignores warm Pods that are not Ready, outdated or being deleted', async () => {
    const pool = pools.putPool('warm', { replicas: 3 });
    pools.putWarm(pool, 'warm-aaaaaaaaaa', opts, false);
    const old = pools.putWarm(pool, 'warm-bbbbbbbbbb', opts);
    pools.store({ ...old, templateHash: 'outdated' });
    const going = pools.putWarm(pool, 'warm-cccccccccc', opts);
    pools.store({ ...going, metadata: { ...going.metadata, deletionTimestamp: '2030-01-01T00:00:00Z' } });
    cluster.putSession(session(poolRef('warm')));
    await reconcile(key(), deps);
    expect(pools.ops).toEqual([]);
    expect(cluster.session()?.status?.podName).toBe('sbs-demo');
  });

  it('creates the session cold from its own spec when the named pool does not exist (Warning PoolNotFound)', async () => {
    cluster.putSession(session(poolRef('nowhere')));
    await reconcile(key(), deps);
    expect(cluster.writes).toContain('createPod sbs-demo');
    expect(cluster.eventReasons()).toContain('PoolNotFound');
  });
});

describe('the namespace default pool', () => {
  it('binds a session that shapes nothing itself', async () => {
    const pool = pools.putPool('warm', { namespaceDefault: true });
    pools.putWarm(pool, 'warm-aaaaaaaaaa', opts);
    cluster.putSession(session());
    await reconcile(key(), deps);
    expect(cluster.session()?.status?.podName).toBe('warm-aaaaaaaaaa');
  });

  it('leaves a session with its own image (or another workspace size) cold', async () => {
    const pool = pools.putPool('warm', { namespaceDefault: true });
    pools.putWarm(pool, 'warm-aaaaaaaaaa', opts);
    cluster.putSession(session(withSpec({ image: 'mine:1' })));
    cluster.putSession(session(named('c'), uid('u-c'), withSpec({ workspace: { sizeLimit: '5Gi' } })));
    for (const n of ['demo', 'c']) await reconcile(key(n), deps);
    expect(pools.ops).toEqual([]);
  });

  it('binds a session with env and a startup command: they do not shape the Pod, the bind carries them', async () => {
    const pool = pools.putPool('warm', { namespaceDefault: true });
    pools.putWarm(pool, 'warm-aaaaaaaaaa', opts);
    cluster.putSession(
      session(withSpec({ env: [{ name: 'A', value: '1' }], startup: { command: 'serve' } })),
    );
    await reconcile(key(), deps);
    expect(cluster.session()?.status?.podName).toBe('warm-aaaaaaaaaa');
    expect(pools.bound.get('warm-aaaaaaaaaa')).toMatchObject({
      env: [{ name: 'A', value: '1' }],
      startup: { command: 'serve' },
    });
  });

  it('is the oldest pool that says so', async () => {
    const young = pools.putPool('young', { namespaceDefault: true }, 'team-a', '2030-01-01T00:00:05Z');
    const old = pools.putPool('old', { namespaceDefault: true }, 'team-a', '2030-01-01T00:00:01Z');
    pools.putWarm(young, 'young-aaaaaaaaaa', opts);
    pools.putWarm(old, 'old-aaaaaaaaaa', opts);
    cluster.putSession(session());
    await reconcile(key(), deps);
    expect(cluster.session()?.status?.podName).toBe('old-aaaaaaaaaa');
  });

  it('does not apply without namespaceDefault, nor to another namespace', async () => {
    const pool = pools.putPool('warm');
    pools.putWarm(pool, 'warm-aaaaaaaaaa', opts);
    const other = pools.putPool('elsewhere', { namespaceDefault: true }, 'team-b');
    pools.putWarm(other, 'elsewhere-aaaaaaaaaa', opts);
    cluster.putSession(session());
    await reconcile(key(), deps);
    expect(pools.ops).toEqual([]);
  });
});

describe('a claim cut short (the operator died between the claim and the status write)', () => {
  function claimedNotRecorded(): void {
    const pool = pools.putPool('warm');
    const warm = pools.putWarm(pool, 'warm-aaaaaaaaaa', opts);
    pools.store({
      ...warm,
      metadata: {
        ...warm.metadata,
        resourceVersion: '5000',
        controller: {
          apiVersion: 'sandbox.dev/v1alpha1',
          kind: 'SandboxSession',
          name: 'demo',
          uid: 'uid-1',
        },
      },
    });
    cluster.putSession(session(poolRef('warm')));
  }

  it('binds the Pod now when the bind had not happened, and claims nothing else', async () => {
    claimedNotRecorded();
    await reconcile(key(), deps);
    expect(pools.ops).toEqual(['bindStatus warm-aaaaaaaaaa', 'bind warm-aaaaaaaaaa']);
    expect(cluster.session()?.status?.podName).toBe('warm-aaaaaaaaaa');
    expect(cluster.writes).not.toContain('createPod sbs-demo');
  });

  it('keeps the Pod when its agent already serves the session (the bind had happened)', async () => {
    claimedNotRecorded();
    pools.bound.set('warm-aaaaaaaaaa', {
      version: 1,
      pod: { namespace: 'team-a', name: 'warm-aaaaaaaaaa', uid: 'pod-warm-aaaaaaaaaa' },
      session: { namespace: 'team-a', name: 'demo', uid: 'uid-1' },
      token: tokenOf('demo', 'uid-1'),
    });
    await reconcile(key(), deps);
    expect(pools.ops).toEqual(['bindStatus warm-aaaaaaaaaa']);
    expect(cluster.session()?.status?.podName).toBe('warm-aaaaaaaaaa');
  });

  it('deletes the Pod when its agent serves someone else and refuses the bind, then starts over', async () => {
    claimedNotRecorded();
    pools.behaviour.set('warm-aaaaaaaaaa', 'refuse');
    await reconcile(key(), deps);
    expect(pools.ops).toEqual([
      'bindStatus warm-aaaaaaaaaa',
      'bind warm-aaaaaaaaaa',
      'deletePod warm-aaaaaaaaaa',
    ]);
    expect(ready(cluster.session())).toMatchObject({ status: 'False' });
  });

  it('gets no cold Pod while the pool index has not listed (the claimed Pod is not seen yet), then keeps that Pod', async () => {
    // A restarted operator: the Pod this session claimed before the kill is not in the index until
    // the pool informers have listed. Deciding "none bound" then created sbs-demo as well.
    const unsynced = new FakePools(cluster);
    unsynced.index.markSynced(false);
    deps = { ...deps, pools: unsynced.claims(unsynced.podOptions(deps.podOptions)) };
    cluster.putSession(session(poolRef('warm')));
    const early = await reconcile(key(), deps).catch((err: unknown) => err);
    expect(cluster.writes.filter((w) => w.startsWith('createPod'))).toEqual([]);
    expect(unsynced.ops).toEqual([]);
    expect(String(early)).toMatch(/warm pool caches have not synced/);
    // Listed: the claimed Pod is there, bound to the session; it is confirmed, nothing is created.
    const pool = unsynced.putPool('warm');
    const warm = unsynced.putWarm(pool, 'warm-aaaaaaaaaa', opts);
    unsynced.store({
      ...warm,
      metadata: {
        ...warm.metadata,
        resourceVersion: '5000',
        controller: {
          apiVersion: 'sandbox.dev/v1alpha1',
          kind: 'SandboxSession',
          name: 'demo',
          uid: 'uid-1',
        },
      },
    });
    unsynced.index.markSynced();
    await reconcile(key(), deps);
    expect(cluster.session()?.status?.podName).toBe('warm-aaaaaaaaaa');
    expect(cluster.writes.filter((w) => w.startsWith('createPod'))).toEqual([]);
  });

  it('waits (not Ready) while the agent does not answer', async () => {
    claimedNotRecorded();
    pools.behaviour.set('warm-aaaaaaaaaa', 'silent');
    const result = await reconcile(key(), deps);
    expect(ready(cluster.session())).toMatchObject({ status: 'False', reason: 'Creating' });
    expect(result.requeueAfterMs).toBeGreaterThan(0);
    expect(cluster.writes).not.toContain('createPod sbs-demo');
  });
});
