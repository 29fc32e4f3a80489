/**
 * Snapshot and fork routes and MCP tools (docs/snapshots.md) on the app with fakes: a snapshot of a
 * session of the key's namespace; another tenant's key can neither list, read, delete nor fork
 * into it (403 for the namespace, 404 by name in its own); a fork creates one snapshot and count
 * sessions with the source's spec and spec.workspace.fromSnapshot, never its startup command;
 * the session view carries fromSnapshot and WorkspaceVerified.
 */
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import type { SandboxSnapshot } from '@sandbox-platform/api';
import type { FastifyInstance } from 'fastify';

import { buildApp } from '../../../src/app.js';
import { loadConfig } from '../../../src/config.js';
import { WinstonFastifyLogger, silentWinston } from '../../../src/logger.js';
import type { SnapshotApi } from '../../../src/snapshots/kube-snapshots.js';
import { FakeActivity, KEYS, TEST_ENV, auth, testKeys } from '../../helpers/app.js';
import { FakeStore } from '../../helpers/fake-store.js';
import { FakeTransport } from '../../helpers/fake-transport.js';
import { connectMcp, toolText } from '../../helpers/mcp-client.js';
import { ready, session } from '../../helpers/sessions.js';

/** Snapshots in memory, by namespace/name. */
class FakeSnapshots implements SnapshotApi {
  readonly items = new Map<string, SandboxSnapshot>();
  create(namespace: string, s: SandboxSnapshot): Promise<SandboxSnapshot> {
    const created = { ...s, metadata: { ...s.metadata, namespace, uid: `uid-${s.metadata.name}` } };
    this.items.set(`${namespace}/${s.metadata.name}`, created);
    return Promise.resolve(created);
  }
  get(namespace: string, name: string): Promise<SandboxSnapshot | undefined> {
    return Promise.resolve(this.items.get(`${namespace}/${name}`));
  }
  list(namespace: string): Promise<SandboxSnapshot[]> {
    return Promise.resolve([...this.items.values()].filter((s) => s.metadata.namespace === namespace));
  }
  delete(namespace: string, name: string): Promise<boolean> {
    return Promise.resolve(this.items.delete(`${namespace}/${name}`));
  }
}

describe('snapshot and fork routes', () => {
  let app: FastifyInstance;
  let store: FakeStore;
  let snaps: FakeSnapshots;
  beforeEach(async () => {
    store = new FakeStore();
    snaps = new FakeSnapshots();
    app = await buildApp({
      config: loadConfig(TEST_ENV),
      logger: new WinstonFastifyLogger(silentWinston()),
      keys: await testKeys(),
      store,
      transports: { Agent: new FakeTransport(), KubernetesExec: new FakeTransport() },
      activity: new FakeActivity(),
      snapshots: snaps,
    });
    const src = session('src', 'team-a', ready());
    src.spec = {
      ...src.spec,
      image: 'localhost/sandbox-platform/sandbox-agent:dev',
      env: [{ name: 'A', value: '1' }],
      startup: { command: 'npm start' },
      workspace: { sizeLimit: '2Gi' },
    };
    store.put(src);
  });
  afterEach(async () => {
    await app.close();
  });

  const call = (key: string, method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object) =>
    app.inject({ method, url, headers: auth(key), ...(payload ? { payload } : {}) });

  it('takes a snapshot of a session of the key’s namespace (202) and lists, reads and deletes it', async () => {
    const res = await call(KEYS.a, 'POST', '/v1/snapshots', {
      session: 'src',
      name: 'snap1',
      ttlSecondsAfterReady: 60,
    });
    expect(res.statusCode).toBe(202);
    expect(res.json()).toMatchObject({
      name: 'snap1',
      namespace: 'team-a',
      session: 'src',
      ready: false,
      phase: 'Pending',
    });
    expect(snaps.items.get('team-a/snap1')?.spec).toEqual({
      sessionRef: { name: 'src' },
      ttlSecondsAfterReady: 60,
    });
    expect((await call(KEYS.a, 'GET', '/v1/snapshots')).json()).toMatchObject({ items: [{ name: 'snap1' }] });
    expect((await call(KEYS.a, 'GET', '/v1/snapshots/snap1')).statusCode).toBe(200);
    expect((await call(KEYS.a, 'DELETE', '/v1/snapshots/snap1')).statusCode).toBe(204);
    expect((await call(KEYS.a, 'GET', '/v1/snapshots/snap1')).json()).toMatchObject({
      type: expect.stringMatching(/snapshot-not-found$/),
    });
  });

  it('refuses a snapshot of a session that does not exist (404)', async () => {
    expect((await call(KEYS.a, 'POST', '/v1/snapshots', { session: 'nope' })).statusCode).toBe(404);
    expect(snaps.items.size).toBe(0);
  });

  it('keeps tenants apart: another key cannot list, read, delete or fork team-a’s', async () => {
    await call(KEYS.a, 'POST', '/v1/snapshots', { session: 'src', name: 'snap1' });
    expect((await call(KEYS.b, 'GET', '/v1/snapshots?namespace=team-a')).statusCode).toBe(403);
    expect((await call(KEYS.b, 'GET', '/v1/snapshots')).json()).toEqual({ items: [] });
    expect((await call(KEYS.b, 'GET', '/v1/snapshots/snap1')).statusCode).toBe(404);
    expect((await call(KEYS.b, 'GET', '/v1/snapshots/snap1?namespace=team-a')).statusCode).toBe(403);
    expect((await call(KEYS.b, 'DELETE', '/v1/snapshots/snap1?namespace=team-a')).statusCode).toBe(403);
    expect(
      (await call(KEYS.b, 'POST', '/v1/sessions/src/fork?namespace=team-a', { count: 1 })).statusCode,
    ).toBe(403);
    expect((await call(KEYS.b, 'POST', '/v1/sessions/src/fork', { count: 1 })).statusCode).toBe(404);
    expect(snaps.items.size).toBe(1);
  });

  it('forks: one snapshot and count sessions with the source’s spec and fromSnapshot, no startup', async () => {
    const res = await call(KEYS.a, 'POST', '/v1/sessions/src/fork', { count: 3, names: ['f1', 'f2', 'f3'] });
    expect(res.statusCode).toBe(201);
    const body = res.json<{
      snapshot: { name: string };
      sessions: Array<{ name: string; fromSnapshot: string }>;
    }>();
    expect(body.sessions.map((s) => s.name)).toEqual(['f1', 'f2', 'f3']);
    expect(snaps.items.size).toBe(1);
    const snap = body.snapshot.name;
    expect(snap).toMatch(/^src-[a-z0-9]{5}$/);
    expect(body.sessions.every((s) => s.fromSnapshot === snap)).toBe(true);
    const f1 = store.get('team-a', 'f1')!;
    expect(f1.spec).toMatchObject({
      image: 'localhost/sandbox-platform/sandbox-agent:dev',
      env: [{ name: 'A', value: '1' }],
      workspace: { sizeLimit: '2Gi', fromSnapshot: { name: snap } },
    });
    expect(f1.spec.startup).toBeUndefined();
    expect(f1.metadata.annotations?.['sandbox.dev/created-by-key']).toBe('a');
  });

  it('checks count and names', async () => {
    expect((await call(KEYS.a, 'POST', '/v1/sessions/src/fork', { count: 0 })).statusCode).toBe(400);
    expect((await call(KEYS.a, 'POST', '/v1/sessions/src/fork', { count: 11 })).statusCode).toBe(400);
    expect((await call(KEYS.a, 'POST', '/v1/sessions/src/fork', { count: 2, names: ['x'] })).statusCode).toBe(
      400,
    );
    expect(
      (await call(KEYS.a, 'POST', '/v1/sessions/src/fork', { count: 2, names: ['x', 'x'] })).statusCode,
    ).toBe(400);
    expect(snaps.items.size).toBe(0);
  });

  it('shows fromSnapshot and WorkspaceVerified in the session view', async () => {
    const s = session('f9', 'team-a', ready());
    s.spec.workspace = { fromSnapshot: { name: 'snap1' } };
    s.status!.conditions!.push({
      type: 'WorkspaceVerified',
      status: 'True',
      reason: 'SnapshotVerified',
      message: 'digest verified',
      lastTransitionTime: '2030-01-01T00:00:01Z',
    });
    store.put(s);
    expect((await call(KEYS.a, 'GET', '/v1/sessions/f9')).json()).toMatchObject({
      fromSnapshot: 'snap1',
      workspaceVerified: { status: 'True', reason: 'SnapshotVerified' },
    });
  });

  it('offers fork_session, snapshot_session, get_snapshot, list_snapshots and delete_snapshot over MCP', async () => {
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    const client = await connectMcp(url, KEYS.a);
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toEqual(
        expect.arrayContaining([
          'fork_session',
          'snapshot_session',
          'get_snapshot',
          'list_snapshots',
          'delete_snapshot',
        ]),
      );
      const fork = await client.callTool({ name: 'fork_session', arguments: { session: 'src', count: 2 } });
      const forked = JSON.parse(toolText(fork)) as { sessions: Array<{ name: string }> };
      expect(forked.sessions).toHaveLength(2);
      const list = await client.callTool({ name: 'list_snapshots', arguments: {} });
      expect(JSON.parse(toolText(list))).toMatchObject({ items: [{ session: 'src' }] });
    } finally {
      await client.close();
    }
  });
});
