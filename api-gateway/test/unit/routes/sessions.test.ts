import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';

import { KEYS, auth, buildTestApp, type TestApp } from '../../helpers/app.js';
import { expectProblem } from '../../helpers/problem.js';
import { collected, ready, session } from '../../helpers/sessions.js';

describe('session routes', () => {
  let t: TestApp;
  beforeEach(async () => {
    t = await buildTestApp();
  });
  afterEach(async () => {
    await t.app.close();
  });

  describe('POST /v1/sessions', () => {
    it('creates a session in the key default namespace with policy defaults (201)', async () => {
      const res = await t.app.inject({
        method: 'POST',
        url: '/v1/sessions',
        headers: auth(KEYS.a),
        payload: { name: 'demo' },
      });
      expect(res.statusCode).toBe(201);
      expect(res.json()).toMatchObject({
        name: 'demo',
        namespace: 'team-a',
        ready: false,
        reason: 'Creating',
        execTransport: 'Agent',
      });
      const cr = t.store.get('team-a', 'demo')!;
      expect(cr.spec).toEqual({ idleTimeoutSeconds: 1800, maxLifetimeSeconds: 7200 });
    });

    it('returns the existing session with 200 when the same request is repeated', async () => {
      const payload = { name: 'demo', idleTimeoutSeconds: 600 };
      const first = await t.app.inject({
        method: 'POST',
        url: '/v1/sessions',
        headers: auth(KEYS.a),
        payload,
      });
      const second = await t.app.inject({
        method: 'POST',
        url: '/v1/sessions',
        headers: auth(KEYS.a),
        payload,
      });
      expect([first.statusCode, second.statusCode]).toEqual([201, 200]);
      expect(second.json<{ uid: string }>().uid).toBe(first.json<{ uid: string }>().uid);
    });

    it('answers 409 conflict when the existing session has a different explicit spec', async () => {
      await t.app.inject({
        method: 'POST',
        url: '/v1/sessions',
        headers: auth(KEYS.a),
        payload: { name: 'demo' },
      });
      const res = await t.app.inject({
        method: 'POST',
        url: '/v1/sessions',
        headers: auth(KEYS.a),
        payload: { name: 'demo', execTransport: 'KubernetesExec' },
      });
      expect(expectProblem(res, 409, 'conflict').detail).toMatch(/execTransport/);
    });

    it('generates a DNS-label name when none is given', async () => {
      const res = await t.app.inject({
        method: 'POST',
        url: '/v1/sessions',
        headers: auth(KEYS.a),
        payload: {},
      });
      expect(res.statusCode).toBe(201);
      expect(res.json<{ name: string }>().name).toMatch(/^sbx-[a-z0-9]{10}$/);
    });

    it('passes allowed overrides into the spec (env as name/value pairs)', async () => {
      const payload = {
        name: 'py',
        image: 'docker.io/library/python:3.12',
        env: { FOO: 'bar' },
        idleTimeoutSeconds: 900,
        maxLifetimeSeconds: 3600,
        shutdownPolicy: 'Retain',
        execTransport: 'KubernetesExec',
      };
      const res = await t.app.inject({
        method: 'POST',
        url: '/v1/sessions?namespace=team-a',
        headers: auth(KEYS.a),
        payload,
      });
      expect(res.statusCode).toBe(201);
      expect(t.store.get('team-a', 'py')!.spec).toEqual({
        image: 'docker.io/library/python:3.12',
        env: [{ name: 'FOO', value: 'bar' }],
        idleTimeoutSeconds: 900,
        maxLifetimeSeconds: 3600,
        shutdownPolicy: 'Retain',
        execTransport: 'KubernetesExec',
      });
    });

    it.each([
      [{ name: 'x', idleTimeoutSeconds: 3601 }, /idleTimeoutSeconds exceeds/],
      [{ name: 'x', idleTimeoutSeconds: 0 }, /never collected/],
      [{ name: 'x', maxLifetimeSeconds: 7201 }, /maxLifetimeSeconds exceeds/],
    ])('refuses %j with 422 policy-violation', async (payload, detail) => {
      const res = await t.app.inject({ method: 'POST', url: '/v1/sessions', headers: auth(KEYS.a), payload });
      expect(expectProblem(res, 422, 'policy-violation').detail).toMatch(detail);
      expect(t.store.calls).toEqual([]);
    });

    it('refuses an exec transport the policy does not allow', async () => {
      const app2 = await buildTestApp({ GATEWAY_ALLOWED_EXEC_TRANSPORTS: 'Agent' });
      const res = await app2.app.inject({
        method: 'POST',
        url: '/v1/sessions',
        headers: auth(KEYS.a),
        payload: { name: 'x', execTransport: 'KubernetesExec' },
      });
      expectProblem(res, 422, 'policy-violation');
      await app2.app.close();
    });

    it.each([
      ['an invalid name', { name: 'Not_A_Label' }, /name/],
      ['a name over 63 characters', { name: 'a'.repeat(64) }, /name/],
      ['an unknown field', { name: 'ok', idleTimeout: 5 }, /unknown field "idleTimeout"/],
      ['a wrong JSON type', { name: 'ok', idleTimeoutSeconds: '600' }, /idleTimeoutSeconds must be integer/],
      ['a reserved env name', { name: 'ok', env: { SANDBOX_TOKEN: 'x' } }, /env/],
      ['a non-string env value', { name: 'ok', env: { A: 1 } }, /env/],
    ])('refuses %s with 400 before any Kubernetes call', async (_what, payload, detail) => {
      const res = await t.app.inject({ method: 'POST', url: '/v1/sessions', headers: auth(KEYS.a), payload });
      expect(expectProblem(res, 400, 'invalid-request').detail).toMatch(detail);
      expect(t.store.calls).toEqual([]);
    });

    it('refuses a namespace the key may not use with 403 (body or query)', async () => {
      const inBody = await t.app.inject({
        method: 'POST',
        url: '/v1/sessions',
        headers: auth(KEYS.a),
        payload: { name: 'x', namespace: 'team-b' },
      });
      const inQuery = await t.app.inject({
        method: 'POST',
        url: '/v1/sessions?namespace=team-b',
        headers: auth(KEYS.a),
        payload: { name: 'x' },
      });
      expectProblem(inBody, 403, 'forbidden');
      expectProblem(inQuery, 403, 'forbidden');
      expect(t.store.calls).toEqual([]);
    });

    it('refuses differing namespaces in body and query', async () => {
      const res = await t.app.inject({
        method: 'POST',
        url: '/v1/sessions?namespace=team-a',
        headers: auth(KEYS.both),
        payload: { name: 'x', namespace: 'team-b' },
      });
      expectProblem(res, 400, 'invalid-request');
    });

    it('answers 409 while a session of that name is being deleted', async () => {
      t.store.put(session('old', 'team-a', (s) => (s.metadata.deletionTimestamp = '2030-01-01T00:00:00Z')));
      const res = await t.app.inject({
        method: 'POST',
        url: '/v1/sessions',
        headers: auth(KEYS.a),
        payload: { name: 'old' },
      });
      expectProblem(res, 409, 'conflict');
      expect(res.headers['retry-after']).toBe('2');
    });

    it('hides the cause of an unexpected failure behind a generic 500', async () => {
      t.store.createError = new Error('etcd exploded: secret detail');
      const res = await t.app.inject({
        method: 'POST',
        url: '/v1/sessions',
        headers: auth(KEYS.a),
        payload: { name: 'x' },
      });
      const body = expectProblem(res, 500, 'internal');
      expect(JSON.stringify(body)).not.toMatch(/etcd|secret detail/);
    });
  });

  describe('GET /v1/sessions/{name}', () => {
    it('returns a session of the caller namespace without pod address or token', async () => {
      t.store.put(session('demo', 'team-a', ready('10.1.2.3')));
      const res = await t.app.inject({ method: 'GET', url: '/v1/sessions/demo', headers: auth(KEYS.a) });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({
        name: 'demo',
        namespace: 'team-a',
        ready: true,
        reason: 'SandboxReady',
      });
      expect(res.body).not.toContain('10.1.2.3');
    });

    it('answers 404 for an unknown session in the caller namespace', async () => {
      const res = await t.app.inject({ method: 'GET', url: '/v1/sessions/nope', headers: auth(KEYS.a) });
      expectProblem(res, 404, 'session-not-found');
    });

    it('reads its own write: a session created a moment ago whose watch event has not arrived is read from the API server', async () => {
      t.store.watchLags = true;
      const created = await t.app.inject({
        method: 'POST',
        url: '/v1/sessions',
        headers: auth(KEYS.a),
        payload: { name: 'fresh' },
      });
      expect(created.statusCode).toBe(201);
      expect(t.store.get('team-a', 'fresh')).toBeUndefined();
      const res = await t.app.inject({ method: 'GET', url: '/v1/sessions/fresh', headers: auth(KEYS.a) });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ name: 'fresh', namespace: 'team-a', ready: false });
      expect(t.store.calls).toContain('read team-a/fresh');
    });

    it('answers from the cache without an API read when the session is there', async () => {
      t.store.put(session('cached', 'team-a', ready()));
      const res = await t.app.inject({ method: 'GET', url: '/v1/sessions/cached', headers: auth(KEYS.a) });
      expect(res.statusCode).toBe(200);
      expect(t.store.calls.filter((c) => c.startsWith('read '))).toEqual([]);
    });

    it('answers 410 with the reason for a session seen deleted', async () => {
      t.store.put(session('gone', 'team-a', ready()));
      t.store.remove('team-a', 'gone', 'IdleTimeout');
      const res = await t.app.inject({ method: 'GET', url: '/v1/sessions/gone', headers: auth(KEYS.a) });
      expect(expectProblem(res, 410, 'session-gone').reason).toBe('IdleTimeout');
      expect(t.store.calls.filter((c) => c.startsWith('read '))).toEqual([]);
    });

    it('shows a collected (Retain) session as not ready with its reason', async () => {
      t.store.put(session('kept', 'team-a', collected('LifetimeExceeded')));
      const res = await t.app.inject({ method: 'GET', url: '/v1/sessions/kept', headers: auth(KEYS.a) });
      expect(res.json()).toMatchObject({
        ready: false,
        reason: 'LifetimeExceeded',
        shutdownPolicy: 'Retain',
      });
    });

    it("answers 403 for another tenant's namespace and never reads it", async () => {
      t.store.put(session('secret', 'team-b', ready()));
      const res = await t.app.inject({
        method: 'GET',
        url: '/v1/sessions/secret?namespace=team-b',
        headers: auth(KEYS.a),
      });
      expectProblem(res, 403, 'forbidden');
      expect(res.body).not.toContain('uid-secret');
    });

    it('answers 400 for an invalid name', async () => {
      const res = await t.app.inject({ method: 'GET', url: '/v1/sessions/UPPER', headers: auth(KEYS.a) });
      expectProblem(res, 400, 'invalid-request');
    });

    it('answers 503 gateway-not-ready with Retry-After before the cache synced', async () => {
      t.store.isSynced = false;
      const res = await t.app.inject({ method: 'GET', url: '/v1/sessions/demo', headers: auth(KEYS.a) });
      expectProblem(res, 503, 'gateway-not-ready');
      expect(res.headers['retry-after']).toBe('1');
    });
  });

  describe('GET /v1/sessions', () => {
    it("lists only the requested namespace's sessions, by name", async () => {
      t.store.put(session('b2', 'team-a', ready()));
      t.store.put(session('a1', 'team-a'));
      t.store.put(session('other', 'team-b', ready()));
      const res = await t.app.inject({ method: 'GET', url: '/v1/sessions', headers: auth(KEYS.a) });
      expect(res.json<{ items: Array<{ name: string }> }>().items.map((i) => i.name)).toEqual(['a1', 'b2']);
    });

    it('uses the key default namespace, and another allowed namespace on request', async () => {
      t.store.put(session('in-a', 'team-a'));
      t.store.put(session('in-b', 'team-b'));
      const byDefault = await t.app.inject({ method: 'GET', url: '/v1/sessions', headers: auth(KEYS.both) });
      const inA = await t.app.inject({
        method: 'GET',
        url: '/v1/sessions?namespace=team-a',
        headers: auth(KEYS.both),
      });
      expect(byDefault.json<{ items: Array<{ name: string }> }>().items.map((i) => i.name)).toEqual(['in-b']);
      expect(inA.json<{ items: Array<{ name: string }> }>().items.map((i) => i.name)).toEqual(['in-a']);
    });

    it('answers 403 for another tenant namespace and 400 for an unknown query field', async () => {
      expectProblem(
        await t.app.inject({ method: 'GET', url: '/v1/sessions?namespace=team-b', headers: auth(KEYS.a) }),
        403,
        'forbidden',
      );
      expectProblem(
        await t.app.inject({ method: 'GET', url: '/v1/sessions?ns=team-a', headers: auth(KEYS.a) }),
        400,
        'invalid-request',
      );
    });
  });

  describe('DELETE /v1/sessions/{name}', () => {
    it('deletes a session (204) and then answers 404', async () => {
      t.store.put(session('demo', 'team-a', ready()));
      const first = await t.app.inject({ method: 'DELETE', url: '/v1/sessions/demo', headers: auth(KEYS.a) });
      const second = await t.app.inject({
        method: 'DELETE',
        url: '/v1/sessions/demo',
        headers: auth(KEYS.a),
      });
      expect(first.statusCode).toBe(204);
      expect(first.body).toBe('');
      expectProblem(second, 404, 'session-not-found');
    });

    it("refuses another tenant's session with 403 without deleting it", async () => {
      t.store.put(session('theirs', 'team-b', ready()));
      const res = await t.app.inject({
        method: 'DELETE',
        url: '/v1/sessions/theirs?namespace=team-b',
        headers: auth(KEYS.a),
      });
      expectProblem(res, 403, 'forbidden');
      expect(t.store.get('team-b', 'theirs')).toBeDefined();
      expect(t.store.calls).toEqual([]);
    });

    it('refuses an invalid name with 400 before any Kubernetes call', async () => {
      const res = await t.app.inject({ method: 'DELETE', url: '/v1/sessions/-bad-', headers: auth(KEYS.a) });
      expectProblem(res, 400, 'invalid-request');
      expect(t.store.calls).toEqual([]);
    });
  });
});
