/**
 * e2e (issue 26): what goes wrong around snapshots, on the local cluster (the spec reads and
 * writes localkube's S3 server and signals processes of this machine).
 *
 * - One stored object corrupted in the bucket (a byte of an archive part flipped): a session
 *   restoring the snapshot gets WorkspaceVerified=False reason SnapshotCorrupted, Ready=False with
 *   that reason, a Warning Event, and never turns Ready (an exec through the gateway is refused).
 * - Operator kill -9 during a snapshot (at the first InProgress status) and during a restore (at
 *   WorkspaceRestoring): the snapshot is Ready only once complete (its objects are exactly the
 *   manifest's parts and the manifest: the interrupted attempt's were cleaned), the restored
 *   workspace is the source's, and deleting the snapshot leaves no object in the bucket.
 * - The object store stopped (SIGSTOP of versitygw) during a snapshot: the snapshot fails with
 *   reason StoreUnavailable; the session stays Ready with its workspace as it was; once the store
 *   runs again, deleting the snapshot removes whatever the failed copy left.
 */
import { afterAll, beforeAll, expect } from '@jest/globals';
import {
  CONDITIONS,
  GROUP,
  SNAPSHOT_PLURAL,
  VERSION,
  WORKSPACE_VERIFIED,
  snapshotManifestKey,
  type SandboxSession,
  type SandboxSnapshot,
} from '@sandbox-platform/api';
import { createHash } from 'node:crypto';

import * as k8s from '@kubernetes/client-node';

import { describeOnLocal } from '../../src/framework/not-run.js';
import { waitOperatorRestarted } from '../../src/framework/platform-operator.js';
import { watchResource } from '../../src/framework/resource-watch.js';
import { predicate, waitFor } from '@sandbox-platform/test-support';
import { armKillOnce, seconds, startFromFreshOperator } from '../support/operator-kill.js';
import {
  DESCRIBE,
  NS,
  buildWorkspaceScript,
  condition,
  kube,
  localStore,
  objectStorePid,
  objectsOf,
  readSnapshot,
  run,
  sbx,
  session,
  unique,
  waitCondition,
  waitSnapshotPhase,
} from './support.js';

/** Creates a SandboxSnapshot of `sessionName` through the Kubernetes API. */
async function createSnapshot(name: string, sessionName: string): Promise<void> {
  await kube.custom.createNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    namespace: NS,
    plural: SNAPSHOT_PLURAL,
    body: {
      apiVersion: `${GROUP}/${VERSION}`,
      kind: 'SandboxSnapshot',
      metadata: { name },
      spec: { sessionRef: { name: sessionName } },
    },
  });
}

/** Creates a session restoring `snapshot` through the Kubernetes API (the gateway's fork makes its own snapshot). */
async function createRestoring(name: string, snapshot: string): Promise<void> {
  await kube.custom.createNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    namespace: NS,
    plural: 'sandboxsessions',
    body: {
      apiVersion: `${GROUP}/${VERSION}`,
      kind: 'SandboxSession',
      metadata: { name },
      spec: { workspace: { fromSnapshot: { name: snapshot } } },
    },
  });
}

async function deleteSnapshotAndWait(name: string): Promise<void> {
  await sbx.deleteSnapshot(name).catch(() => undefined);
  await waitFor(
    () => readSnapshot(name),
    predicate(`snapshot ${name} gone`, (s) => s === undefined),
    {
      timeoutMs: 180_000,
      intervalMs: 500,
    },
  );
}

describeOnLocal('snapshot faults', () => {
  const source = unique('snap-faults');
  const cleanup: { sessions: string[]; snapshots: string[] } = { sessions: [source], snapshots: [] };
  let described = '';

  beforeAll(async () => {
    await sbx.createSession({ name: source, idleTimeoutSeconds: 3600 });
    await run(source, buildWorkspaceScript(300));
    described = await run(source, DESCRIBE);
  }, 400_000);
  afterAll(async () => {
    for (const s of cleanup.sessions) await sbx.deleteSession(s).catch(() => undefined);
    for (const s of cleanup.snapshots) await sbx.deleteSnapshot(s).catch(() => undefined);
  });

  it('refuses a restore from a corrupted object: SnapshotCorrupted, never Ready', async () => {
    const snap = unique('snap-corrupt');
    cleanup.snapshots.push(snap);
    await createSnapshot(snap, source);
    const stored = await waitSnapshotPhase(snap, 'Ready');
    const store = localStore();
    const [part] = (await objectsOf(stored)).filter((k) => k.includes('/part-'));
    const chunks: Buffer[] = [];
    for await (const c of await store.get(part!)) chunks.push(c);
    const bytes = Buffer.concat(chunks);
    bytes[bytes.length >> 1] = (bytes[bytes.length >> 1] ?? 0) ^ 0x01;
    await store.put(part!, bytes, createHash('sha256').update(bytes).digest('hex'));
    const target = unique('snap-bad');
    cleanup.sessions.push(target);
    await createRestoring(target, snap);
    const s = await waitCondition(target, WORKSPACE_VERIFIED, 'SnapshotCorrupted');
    expect(condition(s, WORKSPACE_VERIFIED)?.status).toBe('False');
    expect(condition(s, CONDITIONS.ready)).toMatchObject({ status: 'False', reason: 'SnapshotCorrupted' });
    // Events are written after the status, off the reconcile's path: wait for it.
    const events = await waitFor(
      () =>
        kube.kc
          .makeApiClient(k8s.EventsV1Api)
          .listNamespacedEvent({ namespace: NS, fieldSelector: `regarding.name=${target}` }),
      predicate('a WorkspaceRestoreFailed Event', (l) =>
        l.items.some((e) => e.reason === 'WorkspaceRestoreFailed'),
      ),
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    expect(events.items.map((e) => e.reason)).toContain('WorkspaceRestoreFailed');
    // Still not Ready a while later, and the gateway does not run commands in it.
    await expect(sbx.exec(target, { command: 'true', waitSeconds: 10 })).rejects.toThrow(
      /not ready|SnapshotCorrupted/i,
    );
    expect(condition(await session(target), CONDITIONS.ready)?.status).toBe('False');
  }, 600_000);

  it('survives kill -9 of the operator during a snapshot and during a restore', async () => {
    await startFromFreshOperator(kube);
    const snap = unique('snap-kill');
    cleanup.snapshots.push(snap);
    const trigger = await armKillOnce(kube, 'leader');
    const watching = await watchResource<SandboxSnapshot>(
      kube.kc,
      `/apis/${GROUP}/${VERSION}/namespaces/${NS}/${SNAPSHOT_PLURAL}`,
      { fieldSelector: `metadata.name=${snap}` },
      (_type, obj) => {
        if (obj.status?.phase === 'InProgress') trigger.fire('snapshot InProgress');
      },
    );
    try {
      await createSnapshot(snap, source);
      await trigger.fired;
    } finally {
      watching.stop();
    }
    const { kill } = trigger.outcome();
    console.log(
      `operator killed at the snapshot's InProgress; back after ${seconds(await waitOperatorRestarted(kube, kill))} s`,
    );
    const stored = await waitSnapshotPhase(snap, 'Ready');
    const keys = await objectsOf(stored);
    expect(keys.length).toBe(stored.status?.objects);
    expect(keys).toContain(snapshotManifestKey(NS, stored.metadata.uid!));

    await startFromFreshOperator(kube);
    const target = unique('snap-kill-r');
    cleanup.sessions.push(target);
    const restoreKill = await armKillOnce(kube, 'leader');
    const sessionWatch = await watchResource<SandboxSession>(
      kube.kc,
      `/apis/${GROUP}/${VERSION}/namespaces/${NS}/sandboxsessions`,
      { fieldSelector: `metadata.name=${target}` },
      (_type, obj) => {
        if (condition(obj, WORKSPACE_VERIFIED)?.reason === 'WorkspaceRestoring')
          restoreKill.fire('WorkspaceRestoring');
      },
    );
    try {
      await createRestoring(target, snap);
      await restoreKill.fired;
    } finally {
      sessionWatch.stop();
    }
    console.log(
      `operator killed during the restore; back after ${seconds(await waitOperatorRestarted(kube, restoreKill.outcome().kill))} s`,
    );
    await waitCondition(target, WORKSPACE_VERIFIED, 'SnapshotVerified');
    expect(await run(target, DESCRIBE)).toBe(described);

    await deleteSnapshotAndWait(snap);
    expect(await objectsOf(stored)).toEqual([]);
  }, 900_000);

  it('fails a snapshot with StoreUnavailable when the store stops, and leaves the session as it was', async () => {
    const snap = unique('snap-store');
    cleanup.snapshots.push(snap);
    const pid = objectStorePid();
    let stopped = false;
    const watching = await watchResource<SandboxSnapshot>(
      kube.kc,
      `/apis/${GROUP}/${VERSION}/namespaces/${NS}/${SNAPSHOT_PLURAL}`,
      { fieldSelector: `metadata.name=${snap}` },
      (_type, obj) => {
        if (obj.status?.phase === 'InProgress' && !stopped) {
          stopped = true;
          process.kill(pid, 'SIGSTOP');
        }
      },
    );
    let failed: SandboxSnapshot;
    try {
      await createSnapshot(snap, source);
      failed = await waitSnapshotPhase(snap, 'Failed');
    } finally {
      watching.stop();
      process.kill(pid, 'SIGCONT');
    }
    expect(stopped).toBe(true);
    expect(failed.status?.conditions?.[0]?.reason).toBe('StoreUnavailable');
    expect(failed.status?.digest).toBeUndefined();
    expect(condition(await session(source), CONDITIONS.ready)?.status).toBe('True');
    expect(await run(source, DESCRIBE)).toBe(described);
    await deleteSnapshotAndWait(snap);
    expect(await objectsOf(failed)).toEqual([]);
  }, 600_000);
});
