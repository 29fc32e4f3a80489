/**
 * SECURITY (issue 25, ADR 0027): every phase that reads a child by its deterministic name judges
 * it by the exact ownership test. An object in the session's namespace that names this session's
 * UID under an apiVersion we do not serve (sandbox.dev/v0: the garbage collector cannot resolve
 * it, so it never goes away) is foreign: never mounted, used, waited for, nor deleted. Each case
 * was shown to fail with the old group-only match (see the commit message).
 */
import { beforeEach, describe, expect, it } from '@jest/globals';

import { NameConflictError } from '../../../src/controller/errors.js';
import { reconcile } from '../../../src/controller/reconcile.js';
import type { ControllerDeps } from '../../../src/controller/scope.js';
import type { ChildMetadata } from '../../../src/state/views.js';
import { FakeCluster } from '../../fakes/fake-cluster.js';
import { FakeClock, controllerDeps } from '../../fakes/fakes.js';
import { podView, ready } from '../../fixtures/pods.js';
import { session, withSpec, withStatus } from '../../fixtures/sessions.js';

const KEY = { namespace: 'team-a', name: 'demo' };

let cluster: FakeCluster;
let deps: ControllerDeps;

beforeEach(() => {
  cluster = new FakeCluster();
  deps = controllerDeps(cluster, new FakeClock(Date.parse('2030-01-01T00:00:10Z')));
});

/** Metadata of a look-alike: this session's name and UID under a version not served. */
function lookalike(name: string): ChildMetadata {
  return {
    name,
    namespace: 'team-a',
    uid: `lookalike-${name}`,
    resourceVersion: '3',
    sessionLabel: 'demo',
    controller: { apiVersion: 'sandbox.dev/v0', kind: 'SandboxSession', name: 'demo', uid: 'uid-1' },
  };
}

const readyCondition = () => cluster.session()?.status?.conditions?.find((c) => c.type === 'Ready');

describe('a look-alike child in the session namespace', () => {
  it('Pod sbs-demo (Ready): NameConflict, never reported as the session Pod, not deleted', async () => {
    cluster.putPod(podView(ready, (p) => (p.metadata = lookalike('sbs-demo'))));
    cluster.putSession(session());
    await expect(reconcile(KEY, deps)).rejects.toBeInstanceOf(NameConflictError);
    expect(readyCondition()).toMatchObject({ status: 'False', reason: 'NameConflict' });
    expect(cluster.session()?.status?.podIP).toBeUndefined();
    expect(cluster.writes.filter((w) => w.includes('Pod'))).toEqual([]);
  });

  it('Secret sbs-demo-token with this UID annotated: NameConflict, never mounted, not deleted', async () => {
    cluster.putSecret({ metadata: lookalike('sbs-demo-token'), sessionUID: 'uid-1' });
    cluster.putSession(session());
    await expect(reconcile(KEY, deps)).rejects.toBeInstanceOf(NameConflictError);
    expect(readyCondition()).toMatchObject({ reason: 'NameConflict' });
    expect(readyCondition()?.message).toContain('Secret sbs-demo-token');
    expect(cluster.writes).toEqual(['patchStatus demo']);
  });

  it('workspace claim sbs-demo-workspace: NameConflict, no Pod on it, not deleted', async () => {
    cluster.putClaim({ metadata: lookalike('sbs-demo-workspace'), phase: 'Bound' });
    cluster.putSession(session(withSpec({ workspace: { sizeLimit: '1Gi', persistentVolumeClaim: {} } })));
    await expect(reconcile(KEY, deps)).rejects.toBeInstanceOf(NameConflictError);
    expect(readyCondition()?.message).toContain('PersistentVolumeClaim sbs-demo-workspace');
    expect(cluster.writes.filter((w) => /Pod|Claim/.test(w))).toEqual([]);
  });

  it('a suspended session deletes no look-alike Pod at status.podName', async () => {
    cluster.putPod(podView(ready, (p) => (p.metadata = lookalike('sbs-demo'))));
    cluster.putSession(session(withSpec({ suspend: true }), withStatus({ podName: 'sbs-demo' })));
    await reconcile(KEY, deps).catch(() => undefined);
    expect(cluster.writes.filter((w) => w.startsWith('deletePod'))).toEqual([]);
    expect(cluster.pods.has('team-a/sbs-demo')).toBe(true);
  });

  it('a collected (Retain) session deletes neither a look-alike Pod nor Secret', async () => {
    cluster.putPod(podView(ready, (p) => (p.metadata = lookalike('sbs-demo'))));
    cluster.putSecret({ metadata: lookalike('sbs-demo-token'), sessionUID: 'uid-1' });
    cluster.putSession(
      session(
        withSpec({ shutdownPolicy: 'Retain' }),
        withStatus({
          podName: 'sbs-demo',
          conditions: [
            {
              type: 'Ready',
              status: 'False',
              reason: 'IdleTimeout',
              message: 'idle',
              lastTransitionTime: '2030-01-01T00:00:05Z',
            },
          ],
        }),
      ),
    );
    await reconcile(KEY, deps);
    expect(cluster.writes.filter((w) => w.startsWith('delete'))).toEqual([]);
  });
});
