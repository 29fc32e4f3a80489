/**
 * The persistent workspace: the claim is created between the Secret and the Pod, owned, mounted,
 * never adopted; an unbound claim is WorkspacePending, then WorkspaceNotBound after the bind
 * timeout; a claim of a StorageClass that does not exist is StorageClassNotFound.
 */
import { beforeEach, describe, expect, it } from '@jest/globals';
import type { SandboxSession } from '@sandbox-platform/api';

import { NameConflictError } from '../../../src/controller/errors.js';
import { reconcile } from '../../../src/controller/reconcile.js';
import type { ControllerDeps } from '../../../src/controller/scope.js';
import { FakeCluster } from '../../fakes/fake-cluster.js';
import { FakeClock, controllerDeps, type MemoryObserver } from '../../fakes/fakes.js';
import { podView, ready } from '../../fixtures/pods.js';
import { session, withSpec } from '../../fixtures/sessions.js';

const KEY = { namespace: 'team-a', name: 'demo' };
const CLAIM = 'sbs-demo-workspace';

let cluster: FakeCluster;
let clock: FakeClock;
let deps: ControllerDeps & { observer: MemoryObserver };

beforeEach(() => {
  cluster = new FakeCluster();
  cluster.claimCreatedAt = '2030-01-01T00:00:10Z';
  clock = new FakeClock(Date.parse('2030-01-01T00:00:10Z'));
  deps = controllerDeps(cluster, clock);
});

function persistent(pvc: { storageClassName?: string; accessMode?: 'ReadWriteOncePod' } = {}) {
  return withSpec({ workspace: { sizeLimit: '5Gi', persistentVolumeClaim: pvc } });
}

function bind(): void {
  cluster.updateClaim('team-a', CLAIM, (v) => ({ ...v, phase: 'Bound', volumeName: 'pv-1' }));
}

function podReady(): void {
  cluster.updatePod('team-a', 'sbs-demo', (v) => podView(ready, (p) => (p.metadata = v.metadata)));
}

function readyCondition(s: SandboxSession | undefined): Record<string, unknown> | undefined {
  return s?.status?.conditions?.find((c) => c.type === 'Ready');
}

describe('persistent workspace: provisioning', () => {
  it('creates the Secret, the claim, then the Pod mounting it; names the claim in status', async () => {
    cluster.putSession(session(persistent({ storageClassName: 'standard', accessMode: 'ReadWriteOncePod' })));
    await reconcile(KEY, deps);
    expect(cluster.writes).toEqual([
      'createSecret sbs-demo-token',
      `createClaim ${CLAIM}`,
      'createPod sbs-demo',
      'patchStatus demo',
    ]);
    const claim = cluster.claims.get(`team-a/${CLAIM}`)!.body;
    expect(claim.metadata?.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'SandboxSession', uid: 'uid-1', controller: true }),
    ]);
    expect(claim.metadata?.labels).toMatchObject({ 'app.kubernetes.io/managed-by': 'sandbox-operator' });
    expect(claim.spec).toEqual({
      accessModes: ['ReadWriteOncePod'],
      storageClassName: 'standard',
      volumeMode: 'Filesystem',
      resources: { requests: { storage: '5Gi' } },
    });
    const pod = cluster.pods.get('team-a/sbs-demo')!.body;
    expect(pod.spec?.volumes?.find((v) => v.name === 'workspace')).toEqual({
      name: 'workspace',
      persistentVolumeClaim: { claimName: CLAIM },
    });
    expect(cluster.session()?.status).toMatchObject({ workspaceClaimName: CLAIM, phase: 'Pending' });
    expect(cluster.eventReasons()).toEqual(['CreatedWorkspace', 'CreatedPod']);
  });

  it('leaves the class to the cluster default when the spec names none', async () => {
    cluster.putSession(session(persistent()));
    await reconcile(KEY, deps);
    expect(cluster.claims.get(`team-a/${CLAIM}`)!.body.spec?.storageClassName).toBeUndefined();
  });

  it('creates no claim for an emptyDir workspace', async () => {
    cluster.putSession(session());
    await reconcile(KEY, deps);
    expect(cluster.claims.size).toBe(0);
    expect(cluster.session()?.status?.workspaceClaimName).toBeUndefined();
  });

  it('says WorkspacePending while the Pod waits for its claim, and requeues before the bind timeout', async () => {
    cluster.putSession(session(persistent()));
    const result = await reconcile(KEY, deps);
    expect(readyCondition(cluster.session())).toMatchObject({
      status: 'False',
      reason: 'WorkspacePending',
      message: `Waiting for PersistentVolumeClaim ${CLAIM} (StorageClass standard) to be bound`,
    });
    expect(result.requeueAfterMs).toBe(5000);
  });

  it('is Ready once the claim is bound and the Pod ready', async () => {
    cluster.putSession(session(persistent()));
    await reconcile(KEY, deps);
    bind();
    podReady();
    await reconcile(KEY, deps);
    expect(readyCondition(cluster.session())).toMatchObject({ status: 'True', reason: 'SandboxReady' });
  });

  it('creates a Pod deleted from outside again on the same claim (the workspace is kept)', async () => {
    cluster.putSession(session(persistent()));
    await reconcile(KEY, deps);
    bind();
    cluster.collect('pod', 'team-a', 'sbs-demo');
    cluster.writes.length = 0;
    await reconcile(KEY, deps);
    expect(cluster.writes).toContain('createPod sbs-demo');
    expect(cluster.writes).not.toContain(`createClaim ${CLAIM}`);
    expect(cluster.claims.get(`team-a/${CLAIM}`)!.view.volumeName).toBe('pv-1');
  });
});

describe('persistent workspace: bad input', () => {
  it('a StorageClass that does not exist is StorageClassNotFound (Failed, Warning event), not a hang', async () => {
    cluster.putSession(session(persistent({ storageClassName: 'no-such-class' })));
    const result = await reconcile(KEY, deps);
    const ready = readyCondition(cluster.session());
    expect(ready).toMatchObject({ status: 'False', reason: 'StorageClassNotFound' });
    expect(ready?.message).toContain(
      'StorageClass no-such-class of PersistentVolumeClaim sbs-demo-workspace',
    );
    expect(cluster.session()?.status?.phase).toBe('Failed');
    expect(cluster.events.at(-1)?.event).toMatchObject({ type: 'Warning', reason: 'StorageClassNotFound' });
    expect(result.requeueAfterMs).toBe(5000);
  });

  it('a claim that never binds is WorkspaceNotBound once the bind timeout passed', async () => {
    cluster.putSession(session(persistent()));
    await reconcile(KEY, deps);
    clock.set('2030-01-01T00:01:09Z');
    const before = await reconcile(KEY, deps);
    expect(readyCondition(cluster.session())).toMatchObject({ reason: 'WorkspacePending' });
    expect(before.requeueAfterMs).toBe(1000);
    clock.set('2030-01-01T00:01:10Z');
    await reconcile(KEY, deps);
    const ready = readyCondition(cluster.session());
    expect(ready).toMatchObject({ status: 'False', reason: 'WorkspaceNotBound' });
    expect(ready?.message).toContain(
      `PersistentVolumeClaim ${CLAIM} (StorageClass standard) has been Pending`,
    );
    expect(cluster.session()?.status?.phase).toBe('Pending');
    expect(cluster.events.at(-1)?.event).toMatchObject({ type: 'Warning', reason: 'WorkspaceNotBound' });
    bind();
    podReady();
    await reconcile(KEY, deps);
    expect(readyCondition(cluster.session())).toMatchObject({ status: 'True' });
  });

  it('a claim without any class (no default StorageClass) says so after the timeout', async () => {
    cluster.defaultStorageClass = undefined;
    cluster.putSession(session(persistent()));
    await reconcile(KEY, deps);
    clock.set('2030-01-01T00:05:00Z');
    await reconcile(KEY, deps);
    expect(readyCondition(cluster.session())?.message).toContain(
      'no StorageClass (none named, and no default StorageClass)',
    );
  });

  it('when StorageClasses cannot be read, a missing class is still reported by the bind timeout', async () => {
    cluster.storageClassesUnknown = true;
    cluster.putSession(session(persistent({ storageClassName: 'no-such-class' })));
    await reconcile(KEY, deps);
    expect(readyCondition(cluster.session())).toMatchObject({ reason: 'WorkspacePending' });
    clock.set('2030-01-01T00:01:10Z');
    await reconcile(KEY, deps);
    expect(readyCondition(cluster.session())).toMatchObject({ reason: 'WorkspaceNotBound' });
  });

  it('never adopts a foreign claim: NameConflict, no Pod, the claim untouched', async () => {
    cluster.putClaim({
      metadata: { name: CLAIM, namespace: 'team-a', uid: 'foreign-1', resourceVersion: '3' },
      phase: 'Bound',
    });
    cluster.putSession(session(persistent()));
    await expect(reconcile(KEY, deps)).rejects.toBeInstanceOf(NameConflictError);
    expect(readyCondition(cluster.session())).toMatchObject({ reason: 'NameConflict' });
    expect(readyCondition(cluster.session())?.message).toContain(`PersistentVolumeClaim ${CLAIM} exists`);
    expect(cluster.pods.size).toBe(0);
    expect(cluster.claims.get(`team-a/${CLAIM}`)!.view.metadata.uid).toBe('foreign-1');
  });

  it("waits for a previous session's claim to go (its data goes with it), then creates a new one", async () => {
    cluster.putClaim({
      metadata: {
        name: CLAIM,
        namespace: 'team-a',
        uid: 'old-claim',
        resourceVersion: '3',
        controller: {
          apiVersion: 'sandbox.dev/v1alpha1',
          kind: 'SandboxSession',
          name: 'demo',
          uid: 'uid-0',
        },
      },
      phase: 'Bound',
    });
    cluster.putSession(session(persistent()));
    await reconcile(KEY, deps);
    expect(cluster.pods.size).toBe(0);
    expect(readyCondition(cluster.session())).toMatchObject({ reason: 'Creating' });
    expect(readyCondition(cluster.session())?.message).toContain('of a previous SandboxSession');
    cluster.collect('claim', 'team-a', CLAIM);
    await reconcile(KEY, deps);
    expect(cluster.writes).toContain(`createClaim ${CLAIM}`);
    expect(cluster.writes).toContain('createPod sbs-demo');
  });
});
