/**
 * The pool index answers "which pool Pod is bound to this session" and "which are this pool's
 * warm Pods" by the exact ownership test (ADR 0027): the informers see every Pod labelled
 * sandbox.dev/pool, and anyone who may create Pods sets that label and any ownerReference.
 * Issue 25: a Pod planted in tenant A's namespace, naming tenant B's session UID under a made-up
 * apiVersion, was `boundTo` B's session.
 */
import { describe, expect, it } from '@jest/globals';

import type { ControllerRefView } from '../../../src/state/views.js';
import { PoolIndex } from '../../../src/pool/pool-index.js';
import type { PoolPodView, PoolView } from '../../../src/pool/pool-view.js';

const victim = { namespace: 'tenant-b', name: 'victim', uid: 'uid-b' };
const served = 'sandbox.dev/v1alpha1';
const toVictim: ControllerRefView = {
  apiVersion: served,
  kind: 'SandboxSession',
  name: 'victim',
  uid: 'uid-b',
};

let rv = 10;
function pod(name: string, namespace: string, controller?: ControllerRefView, pool = 'py'): PoolPodView {
  return {
    metadata: { name, namespace, uid: `pod-${namespace}-${name}`, resourceVersion: String(++rv), controller },
    pool,
    phase: 'Running',
    podIP: '198.18.0.9',
    conditions: [{ type: 'Ready', status: 'True' }],
    containers: [],
  };
}

function poolView(namespace = 'tenant-b', name = 'py', uid = 'pool-uid'): PoolView {
  return {
    metadata: { name, namespace, uid, resourceVersion: '1', generation: 1 },
    spec: { replicas: 1 },
  };
}

function indexWith(...pods: PoolPodView[]): PoolIndex {
  const index = new PoolIndex();
  for (const p of pods) index.applyPod(p, 'added');
  return index;
}

describe('PoolIndex.boundTo', () => {
  it('finds the Pod in the session namespace whose controller reference is exactly the session', () => {
    const own = pod('py-own', 'tenant-b', toVictim);
    expect(indexWith(own).boundTo(victim)).toBe(own);
  });

  it.each<[string, PoolPodView]>([
    [
      'a bogus apiVersion naming the UID, in another namespace',
      pod('planted', 'tenant-a', { ...toVictim, apiVersion: 'sandbox.dev/v0' }),
    ],
    ['the exact reference, in another namespace', pod('planted', 'tenant-a', toVictim)],
    [
      'a bogus apiVersion naming the UID, in the session namespace',
      pod('planted', 'tenant-b', { ...toVictim, apiVersion: 'sandbox.dev/v0' }),
    ],
    ['another group', pod('planted', 'tenant-b', { ...toVictim, apiVersion: 'evil.dev/v1alpha1' })],
    ['the UID under another name', pod('planted', 'tenant-b', { ...toVictim, name: 'other' })],
    ['the pool kind with the session UID', pod('planted', 'tenant-b', { ...toVictim, kind: 'SandboxPool' })],
  ])('never returns %s', (_what, planted) => {
    expect(indexWith(planted).boundTo(victim)).toBeUndefined();
  });

  it('a planted Pod, added after or before, never displaces the session own Pod', () => {
    const own = pod('py-own', 'tenant-b', toVictim);
    const planted = pod('a-planted', 'tenant-a', toVictim);
    expect(indexWith(own, planted).boundTo(victim)).toBe(own);
    expect(indexWith(planted, own).boundTo(victim)).toBe(own);
    const index = indexWith(own, planted);
    index.applyPod(planted, 'deleted');
    expect(index.boundTo(victim)).toBe(own);
  });

  it('of two Pods naming the session in its namespace, prefers the one named in status, else the first by name', () => {
    const b = pod('py-b', 'tenant-b', toVictim);
    const a = pod('py-a', 'tenant-b', toVictim);
    const index = indexWith(b, a);
    expect(index.boundTo(victim, 'py-b')).toBe(b);
    expect(index.boundTo(victim)).toBe(a);
    index.applyPod(a, 'deleted');
    expect(index.boundTo(victim)).toBe(b);
  });

  it('follows a Pod whose controller changes (a claim), and forgets it when it goes', () => {
    const warm = pod('py-x', 'tenant-b', {
      apiVersion: served,
      kind: 'SandboxPool',
      name: 'py',
      uid: 'pool-uid',
    });
    const index = indexWith(warm);
    expect(index.boundTo(victim)).toBeUndefined();
    const claimed = {
      ...warm,
      metadata: { ...warm.metadata, resourceVersion: String(++rv), controller: toVictim },
    };
    index.applyPod(claimed, 'updated');
    expect(index.boundTo(victim)).toBe(claimed);
    index.applyPod(claimed, 'deleted');
    expect(index.boundTo(victim)).toBeUndefined();
  });
});

describe('PoolIndex.warmPods', () => {
  const toPool: ControllerRefView = { apiVersion: served, kind: 'SandboxPool', name: 'py', uid: 'pool-uid' };

  it('lists only Pods in the pool namespace whose controller reference is exactly the pool', () => {
    const own = pod('py-own', 'tenant-b', toPool);
    const index = indexWith(
      own,
      pod('elsewhere', 'tenant-a', toPool),
      pod('bogus-version', 'tenant-b', { ...toPool, apiVersion: 'sandbox.dev/v0' }),
      pod('other-name', 'tenant-b', { ...toPool, name: 'other' }),
      pod('session-kind', 'tenant-b', { ...toPool, kind: 'SandboxSession' }),
      pod('no-controller', 'tenant-b'),
    );
    expect(index.warmPods(poolView()).map((p) => p.metadata.name)).toEqual(['py-own']);
  });
});
