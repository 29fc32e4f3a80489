/* eslint-disable @typescript-eslint/require-await -- the stub implements async API calls synchronously */
/**
 * The SessionStore adapter against a stub of client-node's CustomObjectsApi: one LIST per watched
 * namespace (namespaced RBAC suffices), reads served from the cache with a GET on a miss, status
 * writes with the resourceVersion precondition, written through, and refusals held back.
 */
import { beforeEach, describe, expect, it } from '@jest/globals';
import type * as k8s from '@kubernetes/client-node';
import type { SandboxSession } from '@sandbox-platform/api';

import { ConflictError } from '../../../src/kube/errors.js';
import { SessionCache } from '../../../src/state/session-cache.js';
import { createSessionStore } from '../../../src/kube/session-store.js';
import { named, session, type SessionMod } from '../../fixtures/sessions.js';

const KEY = { namespace: 'team-a', name: 'demo' };

const version =
  (rv: string): SessionMod =>
  (s) => {
    s.metadata.resourceVersion = rv;
  };

const inNamespace =
  (ns: string): SessionMod =>
  (s) => {
    s.metadata.namespace = ns;
  };

function apiError(code: number): Error {
  return Object.assign(new Error(`HTTP-Code: ${code}`), { code, body: '{}' });
}

class StubApi {
  readonly calls: string[] = [];
  objects: SandboxSession[] = [];
  listVersion = '100';
  patchError?: Error;

  async getNamespacedCustomObject(p: { namespace: string; name: string }): Promise<unknown> {
    this.calls.push(`get ${p.namespace}/${p.name}`);
    const found = this.objects.find(
      (o) => o.metadata.namespace === p.namespace && o.metadata.name === p.name,
    );
    if (!found) throw apiError(404);
    return found;
  }

  async listNamespacedCustomObject(p: { namespace: string }): Promise<unknown> {
    this.calls.push(`list ${p.namespace}`);
    const items = this.objects.filter((o) => o.metadata.namespace === p.namespace);
    return { items, metadata: { resourceVersion: this.listVersion } };
  }

  async listClusterCustomObject(): Promise<unknown> {
    this.calls.push('list (all)');
    return { items: this.objects, metadata: { resourceVersion: this.listVersion } };
  }

  /** JsonClient.get: not used by the session store. */
  async get(path: string): Promise<unknown> {
    throw new Error(`unexpected GET ${path}`);
  }

  /** JsonClient.mergePatch: the status write. */
  async mergePatch(
    path: string,
    body: { metadata?: { resourceVersion?: string }; status?: unknown; spec?: unknown },
  ): Promise<unknown> {
    const spec = body.spec === undefined ? '' : ` spec=${JSON.stringify(body.spec)}`;
    this.calls.push(`patch ${path} rv=${body.metadata?.resourceVersion ?? '(none)'}${spec}`);
    if (this.patchError) throw this.patchError;
    return session(version('77'), (s) => {
      if (body.status !== undefined) s.status = body.status as SandboxSession['status'];
      if (body.spec !== undefined) s.spec = { ...s.spec, ...(body.spec as SandboxSession['spec']) };
    });
  }

  async create(): Promise<unknown> {
    throw new Error('not used by the session store');
  }
}

let api: StubApi;
let cache: SessionCache;

beforeEach(() => {
  api = new StubApi();
  cache = new SessionCache();
});

const store = (namespaces: string[]): ReturnType<typeof createSessionStore> =>
  createSessionStore({ custom: api as unknown as k8s.CustomObjectsApi, json: api }, namespaces, cache);

describe('createSessionStore', () => {
  it('LISTs each watched namespace and nothing else', async () => {
    api.objects = [
      session(named('a1'), inNamespace('a')),
      session(named('b1'), inNamespace('b')),
      session(named('c1'), inNamespace('c')),
    ];
    const keys = await store(['a', 'b']).listKeys();
    expect(keys).toEqual([
      { namespace: 'a', name: 'a1' },
      { namespace: 'b', name: 'b1' },
    ]);
    expect(api.calls.sort()).toEqual(['list a', 'list b']);
  });

  it('LISTs cluster-wide when no namespace is named', async () => {
    api.objects = [session(named('a1'), inNamespace('a')), session(named('c1'), inNamespace('c'))];
    expect(await store([]).listKeys()).toHaveLength(2);
    expect(api.calls).toEqual(['list (all)']);
  });

  it('reports sessions the watch has not delivered one LIST after a LIST showed them', async () => {
    const stale: string[][] = [];
    const s = createSessionStore(
      { custom: api as unknown as k8s.CustomObjectsApi, json: api },
      ['team-a'],
      cache,
      (keys) => stale.push(keys),
    );
    api.objects = [session(named('seen'), version('5')), session(named('missed'), version('6'))];
    cache.observe(session(named('seen'), version('5')));
    await s.listKeys();
    expect(stale).toEqual([]);
    await s.listKeys();
    expect(stale).toEqual([['team-a/missed']]);
  });

  it('prunes the cache of sessions a LIST no longer shows', async () => {
    cache.observe(session(named('gone'), version('5')));
    await store(['team-a']).listKeys();
    expect(cache.get('team-a/gone')).toBeUndefined();
  });

  it('serves get from the cache, GETs on a miss, and read always GETs', async () => {
    api.objects = [session(version('9'))];
    const s = store(['team-a']);
    expect((await s.get(KEY))?.metadata.resourceVersion).toBe('9');
    expect(api.calls).toEqual(['get team-a/demo']);
    cache.observe(session(version('8')));
    expect((await s.get(KEY))?.metadata.resourceVersion).toBe('8');
    expect((await s.read(KEY))?.metadata.resourceVersion).toBe('9');
    expect(api.calls).toEqual(['get team-a/demo', 'get team-a/demo']);
    expect(await s.read({ namespace: 'team-a', name: 'absent' })).toBeUndefined();
  });

  it('writes status onto the given resourceVersion and writes the answer through', async () => {
    cache.observe(session(version('8')));
    const result = await store(['team-a']).patchStatus(KEY, { phase: 'Pending' }, '8');
    expect(result).toEqual({ resourceVersion: '77' });
    expect(api.calls).toEqual([
      'patch /apis/sandbox.dev/v1alpha1/namespaces/team-a/sandboxsessions/demo/status rv=8',
    ]);
    expect(cache.get('team-a/demo')?.status?.phase).toBe('Pending');
  });

  it('turns 409 into ConflictError and holds the cache entry back; 404 is gone', async () => {
    cache.observe(session(version('8')));
    api.patchError = apiError(409);
    await expect(store(['team-a']).patchStatus(KEY, { phase: 'Pending' }, '8')).rejects.toBeInstanceOf(
      ConflictError,
    );
    expect(cache.get('team-a/demo')).toBeUndefined();
    api.patchError = apiError(404);
    await expect(store(['team-a']).patchStatus(KEY, { phase: 'Pending' }, '8')).resolves.toBe('gone');
    api.patchError = apiError(500);
    await expect(store(['team-a']).patchStatus(KEY, { phase: 'Pending' }, '8')).rejects.toMatchObject({
      code: 500,
    });
  });

  it('suspends with a merge patch of spec.suspend onto the given resourceVersion, written through', async () => {
    cache.observe(session(version('8')));
    const updated = await store(['team-a']).suspend(KEY, '8');
    expect(updated).toMatchObject({ spec: { suspend: true }, metadata: { resourceVersion: '77' } });
    expect(api.calls).toEqual([
      'patch /apis/sandbox.dev/v1alpha1/namespaces/team-a/sandboxsessions/demo rv=8 spec={"suspend":true}',
    ]);
    expect(cache.get('team-a/demo')?.spec.suspend).toBe(true);
  });

  it('a suspend refused with 409 (a racing activity stamp) is ConflictError and holds the cache back; 404 is gone', async () => {
    cache.observe(session(version('8')));
    api.patchError = apiError(409);
    await expect(store(['team-a']).suspend(KEY, '8')).rejects.toBeInstanceOf(ConflictError);
    expect(cache.get('team-a/demo')).toBeUndefined();
    api.patchError = apiError(404);
    await expect(store(['team-a']).suspend(KEY, '8')).resolves.toBe('gone');
  });
});
