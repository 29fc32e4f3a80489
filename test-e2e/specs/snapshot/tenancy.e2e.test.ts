/**
 * e2e (issue 26): snapshots are tenant-scoped. The other tenant's API key can neither list, read,
 * delete nor fork the e2e tenant's snapshot or session (403 naming the namespace, 404 by name in
 * its own); a session in the other tenant's namespace that names the snapshot cannot restore it
 * (WorkspaceVerified SnapshotNotFound, never Ready), and the CRD refuses a namespace in
 * fromSnapshot or sessionRef outright. Code in a sandbox holds none of the object store's
 * credentials and cannot write to its bucket, directly or through the egress proxy (local cluster:
 * the spec reads localkube's store and its credentials).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { CONDITIONS, GROUP, LABELS, VERSION, WORKSPACE_VERIFIED, secretName } from '@sandbox-platform/api';

import { PermissionDeniedError, NotFoundError } from '../../../sdk/typescript/src/index.js';
import { itOnLocal } from '../../src/framework/not-run.js';
import {
  NS,
  OTHER_NS,
  condition,
  kube,
  localStore,
  other,
  run,
  sbx,
  session,
  unique,
  waitCondition,
} from './support.js';

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

  itOnLocal(
    "gives sandbox code none of the store's credentials and no way to write to its bucket",
    async () => {
      const dir = join(process.env.LOCALKUBE_DIR ?? join(import.meta.dirname, '../../../.localkube'), 's3');
      const endpoint = readFileSync(join(dir, 'endpoint'), 'utf8').trim();
      const secret = readFileSync(join(dir, 'secret-access-key'), 'utf8').trim();
      const pods = await kube.core.listNamespacedPod({
        namespace: NS,
        labelSelector: `${LABELS.session}=${source}`,
      });
      expect(pods.items.length).toBe(1);
      const pod = pods.items[0]!;
      expect(JSON.stringify(pod).includes(secret)).toBe(false);
      // A Pod gets a Secret only through its spec: the sandbox Pod names its own token Secret, no other.
      const named = new Set<string>();
      for (const v of pod.spec?.volumes ?? []) if (v.secret?.secretName) named.add(v.secret.secretName);
      for (const c of pod.spec?.containers ?? []) {
        for (const e of c.env ?? [])
          if (e.valueFrom?.secretKeyRef?.name) named.add(e.valueFrom.secretKeyRef.name);
        for (const f of c.envFrom ?? []) if (f.secretRef?.name) named.add(f.secretRef.name);
      }
      expect([...named]).toEqual([secretName(source)]);
      const key = `${unique('tenant-write')}.txt`;
      const url = `${endpoint}/sandbox-snapshots/${key}`;
      const direct = await run(
        source,
        `curl -sS --noproxy '*' --max-time 3 -X PUT --data x ${url} 2>&1; echo " rc=$?"`,
      );
      // Refused (7) or dropped (28) by the sandbox egress NetworkPolicy: never an S3 answer.
      expect(direct).toMatch(/ rc=(7|28)$/m);
      const proxied = await run(
        source,
        `curl -s -o /dev/null -w '%{http_code}' --max-time 5 -X PUT --data x ${url}; echo " rc=$?"`,
      );
      // The egress proxy (HTTP_PROXY in the Pod) refuses a host no rule allows.
      expect(proxied).toMatch(/^403 rc=0$/m);
      expect(await localStore().list(key)).toEqual([]);
    },
  );

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
