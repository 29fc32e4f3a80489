/**
 * A pool Pod change reaches the pool index first, then wakes its pool and the session it is bound
 * to. Regression (clean-clone CI of b83e9e3, e2e takeover spec): a pooled session whose bound Pod
 * was deleted a second after the bind was woken only by the child informer, read the Pod from a
 * pool index that did not have the deletion yet, kept Ready naming the gone Pod, and was never
 * woken again: 180 s without a Pod.
 */
import { describe, expect, it } from '@jest/globals';

import { poolPodChanged } from '../../../src/pool/pool-controller.js';
import { PoolIndex } from '../../../src/pool/pool-index.js';
import type { PoolPodView } from '../../../src/pool/pool-view.js';
import type { ControllerRefView } from '../../../src/state/views.js';

const session = { namespace: 'tenant-b', name: 'victim', uid: 'uid-b' };
const toSession: ControllerRefView = {
  apiVersion: 'sandbox.dev/v1alpha1',
  kind: 'SandboxSession',
  name: 'victim',
  uid: 'uid-b',
};
const toPool: ControllerRefView = {
  apiVersion: 'sandbox.dev/v1alpha1',
  kind: 'SandboxPool',
  name: 'py',
  uid: 'pool-uid',
};

function pod(name: string, controller: ControllerRefView, resourceVersion = '11'): PoolPodView {
  return {
    metadata: { name, namespace: 'tenant-b', uid: `uid-${name}`, resourceVersion, controller },
    pool: 'py',
    phase: 'Running',
    podIP: '198.18.0.9',
    conditions: [{ type: 'Ready', status: 'True' }],
    containers: [],
  };
}

describe('poolPodChanged', () => {
  it('wakes the session a deleted bound Pod belonged to, after the index dropped it', () => {
    const index = new PoolIndex();
    const bound = pod('py-a', toSession);
    index.applyPod(bound, 'added');
    const woken: string[] = [];
    const seenAtWake: Array<PoolPodView | undefined> = [];
    poolPodChanged(bound, 'deleted', {
      index,
      wakePool: (key) => woken.push(`pool ${key}`),
      wakeSession: (key) => {
        woken.push(`session ${key}`);
        seenAtWake.push(index.boundTo(session));
      },
    });
    expect(woken).toEqual(['pool tenant-b/py', 'session tenant-b/victim']);
    // The reconcile it queues reads an index without the deleted Pod.
    expect(seenAtWake).toEqual([undefined]);
  });

  it('wakes the session on every change of its bound Pod (Ready, deleting), not only deletion', () => {
    const index = new PoolIndex();
    const woken: string[] = [];
    const d = { index, wakePool: () => undefined, wakeSession: (key: string) => woken.push(key) };
    poolPodChanged(pod('py-a', toSession, '11'), 'added', d);
    poolPodChanged(pod('py-a', toSession, '12'), 'updated', d);
    expect(woken).toEqual(['tenant-b/victim', 'tenant-b/victim']);
  });

  it('wakes no session for a warm Pod (controlled by its pool)', () => {
    const index = new PoolIndex();
    const woken: string[] = [];
    poolPodChanged(pod('py-w', toPool), 'added', {
      index,
      wakePool: (key) => woken.push(`pool ${key}`),
      wakeSession: (key) => woken.push(`session ${key}`),
    });
    expect(woken).toEqual(['pool tenant-b/py']);
    expect(
      index.warmPods({
        metadata: { ...toPool, namespace: 'tenant-b', resourceVersion: '1', generation: 1 },
        spec: { replicas: 1 },
      }),
    ).toHaveLength(1);
  });
});
