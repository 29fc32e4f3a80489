/**
 * The audit store on a real directory: records chain per session, verify passes on what was
 * written and fails at the first altered, removed or truncated record, retention drops old
 * records and keeps the rest verifiable from the anchor, and the API refuses bad events and
 * calls without the token.
 */
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { AuditEvent } from '@sandbox-platform/api';

import { auditServer } from '../../src/audit/server.js';
import { AuditStore } from '../../src/audit/store.js';

const KEY = Buffer.alloc(32, 7);
const ev = (i: number, time = new Date().toISOString(), session = 's1'): AuditEvent => ({
  time,
  namespace: 'team-a',
  session,
  kind: 'exec',
  actor: 'key-1',
  outcome: 'ok',
  detail: { command: `echo ${i}`, exitCode: 0 },
});

describe('audit store', () => {
  let dir: string;
  let store: AuditStore;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'audit-'));
    store = new AuditStore({ dir, key: KEY, retentionSeconds: 3600, maxRecordsPerSession: 100 });
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));
  const file = (): string => join(dir, 'team-a', 's1.jsonl');

  it('chains records per session and verifies them', async () => {
    await store.append([ev(1), ev(2)]);
    await store.append([ev(3), ev(1, undefined, 's2')]);
    const { records } = await store.records('team-a', 's1', 0, 10);
    expect(records.map((r) => r.seq)).toEqual([1, 2, 3]);
    expect(records[1]!.prev).toBe(records[0]!.hash);
    expect(await store.verify('team-a', 's1')).toEqual({ valid: true, records: 3, firstSeq: 1, lastSeq: 3 });
    expect((await store.verify('team-a', 's2')).valid).toBe(true);
  });

  it('appends again after its namespace directory was removed', async () => {
    await store.append([ev(1)]);
    await rm(join(dir, 'team-a'), { recursive: true, force: true });
    await store.append([ev(2)]);
    const { records } = await store.records('team-a', 's1', 0, 10);
    expect(records.map((r) => r.seq)).toEqual([2]);
  });

  it('detects one altered record, a removed one and a cut tail', async () => {
    await store.append([ev(1), ev(2), ev(3)]);
    const lines = (await readFile(file(), 'utf8')).trim().split('\n');
    await writeFile(file(), [lines[0], lines[1]!.replace('echo 2', 'echo 9'), lines[2]].join('\n') + '\n');
    expect(await store.verify('team-a', 's1')).toMatchObject({
      valid: false,
      brokenAt: 2,
      reason: 'hash-mismatch',
    });
    await writeFile(file(), [lines[0], lines[2]].join('\n') + '\n');
    expect(await store.verify('team-a', 's1')).toMatchObject({
      valid: false,
      brokenAt: 3,
      reason: 'seq-gap',
    });
    await writeFile(file(), [lines[0], lines[1]].join('\n') + '\n');
    expect(await store.verify('team-a', 's1')).toMatchObject({
      valid: false,
      brokenAt: 3,
      reason: 'head-missing',
    });
  });

  it('retention drops old records and the rest still verifies from the anchor', async () => {
    const old = new Date(Date.now() - 7200_000).toISOString();
    await store.append([ev(1, old), ev(2, old), ev(3), ev(4)]);
    expect(await store.sweep()).toEqual({ dropped: 2 });
    const { records } = await store.records('team-a', 's1', 0, 10);
    expect(records.map((r) => r.seq)).toEqual([3, 4]);
    expect(await store.verify('team-a', 's1')).toMatchObject({ valid: true, firstSeq: 3 });
    await store.append([ev(5)]);
    expect(await store.verify('team-a', 's1')).toMatchObject({ valid: true, lastSeq: 5 });
  });

  it('the API needs the token, checks events, and serves records and verify', async () => {
    const server = auditServer(store, 'tok', () => undefined);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const auth = { authorization: 'Bearer tok', 'content-type': 'application/json' };
    try {
      expect((await fetch(`${base}/v1/audit/events`, { method: 'POST', body: '{}' })).status).toBe(401);
      const bad = await fetch(`${base}/v1/audit/events`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ events: [{ ...ev(1), kind: 'nope' }] }),
      });
      expect(bad.status).toBe(400);
      const ok = await fetch(`${base}/v1/audit/events`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ events: [ev(1), ev(2)] }),
      });
      expect(await ok.json()).toEqual({ appended: 2 });
      const recs = (await (
        await fetch(`${base}/v1/audit/sessions/team-a/s1/records?afterSeq=1`, { headers: auth })
      ).json()) as { records: unknown[]; lastSeq: number };
      expect(recs).toMatchObject({ lastSeq: 2, records: [{ seq: 2, kind: 'exec' }] });
      expect(
        await (await fetch(`${base}/v1/audit/sessions/team-a/s1/verify`, { headers: auth })).json(),
      ).toMatchObject({ valid: true, records: 2 });
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});
