/**
 * e2e (issue 26): a workspace with text files, a 50 MiB binary, empty directories, symlinks (one
 * pointing outside the workspace), modes and mtimes -> fork 3 sessions through the gateway: each
 * is Ready only with WorkspaceVerified=True (SnapshotVerified, the snapshot's digest), and holds
 * the same entries, types, modes, sizes, mtimes, link targets (the link to /etc/passwd is a link,
 * not a copy of the file) and bytes as the source; a change in one fork is seen neither in the
 * others nor in the source. Deleting the snapshot deletes its objects from the bucket (local
 * cluster: the specs read localkube's S3 server). Needs `make platform-up` with snapshots on.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { WORKSPACE_VERIFIED, type SandboxSnapshot } from '@sandbox-platform/api';

import { itOnLocal } from '../../src/framework/not-run.js';
import { predicate, waitFor } from '@sandbox-platform/test-support';
import {
  DESCRIBE,
  buildWorkspaceScript,
  objectsOf,
  readSnapshot,
  run,
  sbx,
  session,
  unique,
  verified,
  waitCondition,
} from './support.js';

describe('snapshot and fork of a workspace', () => {
  const source = unique('snap-src');
  let forks: string[] = [];
  let snapshotName = '';
  let described = '';
  let snap: SandboxSnapshot | undefined;

  beforeAll(async () => {
    await sbx.createSession({ name: source, idleTimeoutSeconds: 1800 });
    await run(source, buildWorkspaceScript(50));
    described = await run(source, DESCRIBE);
  }, 300_000);
  afterAll(async () => {
    for (const name of [source, ...forks]) await sbx.deleteSession(name).catch(() => undefined);
    if (snapshotName) await sbx.deleteSnapshot(snapshotName).catch(() => undefined);
  });

  it('describes the source workspace as built (the check below compares against it)', () => {
    // 2020-01-02T03:04:05Z = 1577934245, 2021-02-03T04:05:06Z = 1612325106 (touch -d, UTC).
    expect(described).toMatch(/^f 750 \d+ 1577934245 \.\/src\/run\.sh -> $/m);
    expect(described).toMatch(/^d 2?755 - 1612325106 \.\/empty\/deeper\/still ->$/m);
    expect(described).toMatch(/^f 644 52428800 1577934245 \.\/blob\.bin -> $/m);
    expect(described).toMatch(/^l 777 - 1612325106 \.\/escape -> \/etc\/passwd$/m);
    expect(described).toMatch(/^f 444 \d+ \d+ \.\/ro\.txt -> $/m);
    // Directories of the volume carry the setgid bit of its fsGroup (2xxx).
    expect(described).toMatch(/^d 2?711 - \d+ \.\/locked ->$/m);
  });

  it('forks 3 sessions, each Ready only once WorkspaceVerified says SnapshotVerified', async () => {
    const result = await sbx.fork(source, { count: 3 });
    snapshotName = result.snapshot.name;
    forks = result.sessions.map((s) => s.name);
    expect(forks).toHaveLength(3);
    const done = await sbx.waitUntilSnapshotReady(snapshotName, { timeoutMs: 240_000 });
    expect(done.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(done.files).toBe(7);
    expect(done.symlinks).toBe(3);
    for (const name of forks) {
      const s = await waitCondition(name, WORKSPACE_VERIFIED, 'SnapshotVerified');
      expect(s.status?.workspaceRestore?.digest).toBe(done.digest);
      const view = await sbx.waitUntilReady(name, { timeoutMs: 240_000 });
      expect(view.fromSnapshot).toBe(snapshotName);
      expect(view.workspaceVerified).toMatchObject({ status: 'True', reason: 'SnapshotVerified' });
    }
    snap = await readSnapshot(snapshotName);
  }, 600_000);

  it('gives each fork the same paths, types, modes, sizes, mtimes, link targets and bytes', async () => {
    for (const name of forks) expect(await run(name, DESCRIBE)).toBe(described);
    // The link to /etc/passwd is a link in the fork, whatever /etc/passwd holds.
    expect(await run(forks[0]!, 'test -L /workspace/escape && readlink /workspace/escape')).toBe(
      '/etc/passwd\n',
    );
  });

  it('keeps the forks apart: a change in one is seen neither in the others nor in the source', async () => {
    await run(forks[0]!, 'echo changed > /workspace/src/lib/a.txt; touch /workspace/new-in-fork-0');
    for (const name of [source, forks[1]!, forks[2]!]) {
      expect(await run(name, 'cat /workspace/src/lib/a.txt')).toBe('alpha\n');
      expect(await run(name, 'test -e /workspace/new-in-fork-0 && echo yes || echo no')).toBe('no\n');
    }
    const s = await session(forks[1]!);
    expect(verified(s)?.status).toBe('True');
  });

  itOnLocal('deletes every object of the snapshot from the bucket with it', async () => {
    expect(snap).toBeDefined();
    expect((await objectsOf(snap!)).length).toBe(snap!.status!.objects);
    await sbx.deleteSnapshot(snapshotName);
    await waitFor(
      () => readSnapshot(snapshotName),
      predicate('snapshot gone', (s) => s === undefined),
      {
        timeoutMs: 120_000,
        intervalMs: 500,
      },
    );
    expect(await objectsOf(snap!)).toEqual([]);
    snapshotName = '';
  });
});
