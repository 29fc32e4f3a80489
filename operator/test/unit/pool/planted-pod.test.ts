/**
 * SECURITY (issue 25, ADR 0027): a Pod that another tenant planted can never become a session's
 * Pod, receive its token, or hold it up. Through the real reconcile driver over the fake cluster
 * and the fake warm agents (whose bind client records every call per Pod): the victim session is
 * in team-a; the planted Pods are in team-b (the attacker's own namespace) unless said otherwise,
 * labelled sandbox.dev/pool (so the pool informers index them) and Ready with an IP of their own.
 *
 * Each case was shown to fail with the exact ownership test reverted to the old kind-and-UID
 * match (see the commit message).
 */
import { beforeEach, describe, expect, it } from '@jest/globals';
import { deriveToken } from '@sandbox-platform/api';

import { reconcile } from '../../../src/controller/reconcile.js';
import type { ControllerDeps } from '../../../src/controller/scope.js';
import type { ControllerRefView } from '../../../src/state/views.js';
import { templateHash, type PoolPodOptions } from '../../../src/pool/pool-pod.js';
import type { PoolPodView } from '../../../src/pool/pool-view.js';
import { FakeCluster } from '../../fakes/fake-cluster.js';
import { FakePools } from '../../fakes/fake-pools.js';
import { FakeClock, MASTER_KEY, controllerDeps } from '../../fakes/fakes.js';
import { ready as podReady } from '../../fixtures/pods.js';
import { session, withSpec } from '../../fixtures/sessions.js';

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

const key = { namespace: 'team-a', name: 'demo' };
const toVictim: ControllerRefView = {
  apiVersion: 'sandbox.dev/v1alpha1',
  kind: 'SandboxSession',
  name: 'demo',
  uid: 'uid-1',
};
const readyCondition = () => cluster.session()?.status?.conditions?.find((c) => c.type === 'Ready');

/** A planted Pod: Ready with its own IP unless `notReady`. */
function plant(
  name: string,
  controller: ControllerRefView,
  { namespace = 'team-b', notReady = false, pool = 'warm', hash = undefined as string | undefined } = {},
): PoolPodView {
  const view: PoolPodView = {
    metadata: {
      name,
      namespace,
      uid: `planted-${name}`,
      resourceVersion: '7000',
      controller,
      sessionLabel: 'demo',
    },
    pool,
    templateHash: hash,
    phase: notReady ? 'Pending' : 'Running',
    podIP: notReady ? undefined : '198.18.66.6',
    conditions: notReady ? [] : [{ type: 'Ready', status: 'True' }],
    containers: [{ name: 'sandbox', ready: !notReady, restartCount: 0 }],
  };
  pools.store(view);
  return view;
}

/** Nothing at all was sent to, asked of, or done to the planted Pod. */
function untouched(name: string): void {
  expect(pools.ops.filter((op) => op.includes(name))).toEqual([]);
  expect(pools.bound.has(name)).toBe(false);
  expect(cluster.writes.filter((w) => w.includes(name))).toEqual([]);
}

/** A cold victim session whose own Pod sbs-demo is Ready (IP 198.18.0.5). */
async function readyColdVictim(): Promise<void> {
  cluster.putSession(session());
  await reconcile(key, deps);
  cluster.updatePod('team-a', 'sbs-demo', (p) => {
    const copy = { ...p, metadata: { ...p.metadata } };
    podReady(copy);
    return copy;
  });
  await reconcile(key, deps);
  expect(cluster.session()?.status).toMatchObject({ podName: 'sbs-demo', podIP: '198.18.0.5' });
}

function keepsItsOwnPod(): void {
  expect(cluster.session()?.status).toMatchObject({
    podName: 'sbs-demo',
    podIP: '198.18.0.5',
    phase: 'Ready',
  });
  expect(readyCondition()).toMatchObject({ status: 'True', reason: 'SandboxReady' });
}

describe('a Pod planted in another namespace, naming the victim session', () => {
  it.each<[string, ControllerRefView]>([
    ['(a) under a made-up apiVersion sandbox.dev/v0', { ...toVictim, apiVersion: 'sandbox.dev/v0' }],
    ['(b) under the right apiVersion (exact name and UID)', toVictim],
  ])('%s: the victim keeps its own Pod, no bind or token reaches the planted one', async (_what, ref) => {
    await readyColdVictim();
    plant('planted', ref);
    await reconcile(key, deps);
    keepsItsOwnPod();
    untouched('planted');
  });

  it('(c) labelled with the victim pool name: a pooled victim gets its own pool warm Pod, never the planted one', async () => {
    const pool = pools.putPool('warm');
    pools.putWarm(pool, 'warm-aaaaaaaaaa', opts);
    cluster.putSession(session(withSpec({ poolRef: { name: 'warm' } })));
    plant('warm-planted', toVictim, { pool: 'warm' });
    plant(
      'warm-poolref',
      { apiVersion: 'sandbox.dev/v1alpha1', kind: 'SandboxPool', name: 'warm', uid: pool.metadata.uid },
      { hash: templateHash(pool, opts) },
    );
    await reconcile(key, deps);
    await reconcile(key, deps);
    expect(cluster.session()?.status).toMatchObject({ podName: 'warm-aaaaaaaaaa', podIP: '198.18.1.1' });
    expect(readyCondition()).toMatchObject({ status: 'True' });
    expect(pools.bound.get('warm-aaaaaaaaaa')?.token).toBe(
      deriveToken(MASTER_KEY, { namespace: 'team-a', name: 'demo', uid: 'uid-1' }),
    );
    untouched('warm-planted');
    untouched('warm-poolref');
  });

  it('(d) that never becomes Ready: the victim is neither blocked nor delayed, and becomes Ready on its first reconcile with a Ready Pod', async () => {
    cluster.putSession(session());
    await reconcile(key, deps);
    plant('stuck', toVictim, { notReady: true });
    cluster.updatePod('team-a', 'sbs-demo', (p) => {
      const copy = { ...p, metadata: { ...p.metadata } };
      podReady(copy);
      return copy;
    });
    const result = await reconcile(key, deps);
    keepsItsOwnPod();
    expect(readyCondition()?.message ?? '').not.toMatch(/stuck/);
    expect(result.requeueAfterMs).not.toBe(deps.waitRequeueMs);
    untouched('stuck');
  });
});

describe('a Pod in the victim namespace that only looks like ours', () => {
  it('a warm Pod naming the pool UID under sandbox.dev/v0 (current template hash) is never claimed nor bound', async () => {
    const pool = pools.putPool('warm');
    plant(
      'warm-bogus',
      { apiVersion: 'sandbox.dev/v0', kind: 'SandboxPool', name: 'warm', uid: pool.metadata.uid },
      {
        namespace: 'team-a',
        hash: templateHash(pool, opts),
      },
    );
    cluster.putSession(session(withSpec({ poolRef: { name: 'warm' } })));
    await reconcile(key, deps);
    expect(cluster.session()?.status?.podName).toBe('sbs-demo');
    untouched('warm-bogus');
  });

  it('a Pod naming the session UID under sandbox.dev/v0 is neither used nor confirmed', async () => {
    await readyColdVictim();
    plant('bogus', { ...toVictim, apiVersion: 'sandbox.dev/v0' }, { namespace: 'team-a' });
    await reconcile(key, deps);
    keepsItsOwnPod();
    untouched('bogus');
  });
});

describe('PoolClaims.confirm', () => {
  it('refuses, sending nothing, to ask a Pod that is not exactly the session own', async () => {
    const planted = plant('planted', toVictim);
    const claims = pools.claims(opts);
    const ref = { namespace: 'team-a', name: 'demo', uid: 'uid-1' };
    await expect(claims.confirm(planted, ref, { token: 'token', env: [] })).rejects.toThrow(
      /not controlled by the session/,
    );
    untouched('planted');
  });
});
