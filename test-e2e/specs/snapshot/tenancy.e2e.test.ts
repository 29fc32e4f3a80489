/**
 * e2e (issue 26): snapshots are tenant-scoped. The other tenant's API key can neither list, read,
 * delete nor fork the e2e tenant's snapshot or session (403 naming the namespace, 404 by name in
 * its own); a session in the other tenant's namespace that names the snapshot cannot restore it
 * (WorkspaceVerified SnapshotNotFound, never Ready), and the CRD refuses a namespace in
 * fromSnapshot or sessionRef outright.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CONDITIONS, GROUP, VERSION, WORKSPACE_VERIFIED } from '@sandbox-platform/api';

import { PermissionDeniedError, NotFoundError } from '../../../sdk/typescript/src/index.js';
import { NS, OTHER_NS, condition, kube, other, run, sbx, session, unique, waitCondition } from './support.js';

function sessionBody(name: string, workspace: Record<string, unknown>) {
  return {
    apiVersion: `${GROUP}/${VERSION}`,
    kind: 'SandboxSession',
    metadata: { name },
    spec: { workspace },
  };
}

describe('snapshot tenancy', () => {
  const source = unique('snap-ten');
  let snap = '';
  const theirs = unique('snap-theirs');

  beforeAll(async () => {
    await sbx.createSession({ name: source });
    await run(source, 'echo mine > /workspace/mine.txt');
    snap = (await sbx.snapshot(source)).name;
    await sbx.waitUntilSnapshotReady(snap, { timeoutMs: 240_000 });
  }, 400_000);
  afterAll(async () => {
    await sbx.deleteSession(source).catch(() => undefined);
    if (snap) await sbx.deleteSnapshot(snap).catch(() => undefined);
    await kube.custom
      .deleteNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace: OTHER_NS,
        plural: 'sandboxsessions',
        name: theirs,
      })
      .catch(() => undefined);
  });

  it("keeps the other tenant's key out: list, read, delete, fork", async () => {
    expect((await other.listSnapshots()).map((s) => s.name)).not.toContain(snap);
    await expect(other.listSnapshots(NS)).rejects.toThrow(PermissionDeniedError);
    await expect(other.getSnapshot(snap)).rejects.toThrow(NotFoundError);
    await expect(other.getSnapshot(snap, NS)).rejects.toThrow(PermissionDeniedError);
    await expect(other.deleteSnapshot(snap, NS)).rejects.toThrow(PermissionDeniedError);
    await expect(other.fork(source, { count: 1 }, NS)).rejects.toThrow(PermissionDeniedError);
    await expect(other.fork(source, { count: 1 })).rejects.toThrow(NotFoundError);
    expect((await sbx.getSnapshot(snap)).ready).toBe(true);
  });

  it('does not restore it into a session of another namespace', async () => {
    await kube.custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: OTHER_NS,
      plural: 'sandboxsessions',
      body: sessionBody(theirs, { fromSnapshot: { name: snap } }),
    });
    const s = await waitCondition(theirs, WORKSPACE_VERIFIED, 'SnapshotNotFound', OTHER_NS);
    expect(condition(s, CONDITIONS.ready)?.status).toBe('False');
    expect(condition(await session(theirs, OTHER_NS), CONDITIONS.ready)?.status).toBe('False');
  }, 300_000);

  it('refuses a namespace in fromSnapshot and in sessionRef (CRD)', async () => {
    await expect(
      kube.custom.createNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace: OTHER_NS,
        plural: 'sandboxsessions',
        body: sessionBody(unique('snap-ns'), { fromSnapshot: { name: snap, namespace: NS } }),
      }),
    ).rejects.toThrow(/fromSnapshot.namespace is not allowed/);
    await expect(
      kube.custom.createNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace: OTHER_NS,
        plural: 'sandboxsnapshots',
        body: {
          apiVersion: `${GROUP}/${VERSION}`,
          kind: 'SandboxSnapshot',
          metadata: { name: unique('snap-ns') },
          spec: { sessionRef: { name: source, namespace: NS } },
        },
      }),
    ).rejects.toThrow(/sessionRef.namespace is not allowed/);
  });
});
