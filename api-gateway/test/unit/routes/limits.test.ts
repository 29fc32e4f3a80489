/**
 * Per-key limits, load shedding, quotas and the rough edges of issue 12, through inject() with
 * fakes. Each test names the protection it checks; every one was run once with its protection
 * switched off and failed (docs/gateway.md, "Limits").
 */
import { afterEach, describe, expect, it } from '@jest/globals';

import { ANNOTATIONS } from '@sandbox-platform/api';
import type { LightMyRequestResponse } from 'fastify';

import type { ExecResult } from '../../../src/exec/types.js';
import { KEYS, auth, buildTestApp, type TestApp } from '../../helpers/app.js';
import { result } from '../../helpers/fake-transport.js';
import { expectProblem } from '../../helpers/problem.js';
import { deleting, ready, session } from '../../helpers/sessions.js';

/** A promise and its resolver (to hold a fake exec in flight). */
function deferred<T>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

describe('tenant limits', () => {
  let t: TestApp;
  afterEach(async () => {
    await t.app.close();
  });

  const exec = (key: string, name = 'demo'): Promise<LightMyRequestResponse> =>
    t.app.inject({
      method: 'POST',
      url: `/v1/sessions/${name}/exec`,
      headers: { ...auth(key), 'content-type': 'application/json' },
      payload: { command: 'true' },
    });

  it('limits requests in flight per API key (429 concurrency-limited, Retry-After), not other keys', async () => {
    t = await buildTestApp({ GATEWAY_KEY_MAX_CONCURRENT_REQUESTS: '2' });
    t.store.put(session('demo', 'team-a', ready()));
    t.store.put(session('demo', 'team-b', ready()));
    const held = deferred<ExecResult>();
    let started = 0;
    t.agent.exec = () => {
      started++;
      return held.promise;
    };
    const first = [exec(KEYS.a), exec(KEYS.a)];
    while (started < 2) await new Promise((r) => setTimeout(r, 10)); // both are in flight now
    const third = await exec(KEYS.a);
    expectProblem(third, 429, 'concurrency-limited');
    expect(third.headers['retry-after']).toBe('1');
    const other = exec(KEYS.b);
    held.resolve(result());
    expect((await Promise.all(first)).map((r) => r.statusCode)).toEqual([200, 200]);
    expect((await other).statusCode).toBe(200);
    // The slots are given back once the responses are done.
    expect((await exec(KEYS.a)).statusCode).toBe(200);
  });

  it('limits requests per second per API key (429 rate-limited with Retry-After), not other keys', async () => {
    t = await buildTestApp({ GATEWAY_KEY_MAX_REQUESTS_PER_SECOND: '3' });
    t.store.put(session('demo', 'team-a', ready()));
    t.store.put(session('demo', 'team-b', ready()));
    // Sent together: well within one one-second window.
    const answers = await Promise.all([1, 2, 3, 4].map(() => exec(KEYS.a)));
    expect(answers.map((r) => r.statusCode).sort()).toEqual([200, 200, 200, 429]);
    const limited = answers.find((r) => r.statusCode === 429)!;
    const body = expectProblem(limited, 429, 'rate-limited');
    expect(body.detail).toMatch(/API key a sent more than 3 requests/);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect((await exec(KEYS.b)).statusCode).toBe(200);
    // Health is never limited.
    expect((await t.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
  });

  it('sheds load with 503 overloaded and Retry-After while over a threshold; health still answers', async () => {
    t = await buildTestApp({ GATEWAY_SHED_HEAP_USED_BYTES: '1' });
    t.store.put(session('demo', 'team-a', ready()));
    // under-pressure samples once a second: wait for its first sample.
    const deadline = Date.now() + 5000;
    while (!t.app.isUnderPressure() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    const shed = await exec(KEYS.a);
    const body = expectProblem(shed, 503, 'overloaded');
    expect(body.detail).toMatch(/heapUsedBytes/);
    expect(shed.headers['retry-after']).toBe('2');
    expect(t.agent.calls).toHaveLength(0);
    expect((await t.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
  });

  it('does not shed for a sample interval without event-loop samples (a start that blocked the loop)', async () => {
    t = await buildTestApp({ GATEWAY_SHED_EVENT_LOOP_DELAY_MS: '1000' });
    t.store.put(session('demo', 'team-a', ready()));
    // A loop blocked past under-pressure's sample interval (as a replica's start can be): the
    // interval may end with no delay sample at all, which under-pressure reads as Infinity.
    const seen: number[] = [];
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline && !seen.some((v) => !Number.isFinite(v))) {
      const until = Date.now() + 1100;
      while (Date.now() < until) {
        // busy: nothing else runs
      }
      await new Promise((r) => setImmediate(r));
      seen.push(t.app.memoryUsage().eventLoopDelay);
    }
    expect(seen.some((v) => !Number.isFinite(v))).toBe(true);
    const answer = await exec(KEYS.a);
    expect([answer.statusCode, answer.body.slice(0, 200)]).toEqual([200, answer.body.slice(0, 200)]);
  }, 40_000);

  it('answers 503 overloaded rather than hold a large answer past the shared budget', async () => {
    t = await buildTestApp({ GATEWAY_MAX_BUFFERED_ANSWER_BYTES: '100000' });
    t.store.put(session('demo', 'team-a', ready()));
    t.agent.nextResult = result({ stdout: 'x'.repeat(200_000) });
    expectProblem(await exec(KEYS.a), 503, 'overloaded');
    t.agent.nextResult = result({ stdout: 'x'.repeat(50_000) });
    expect((await exec(KEYS.a)).statusCode).toBe(200);
    // Given back after each response: the same call fits again.
    expect((await exec(KEYS.a)).statusCode).toBe(200);
    expect(t.app.answerBudget.inUse).toBe(0);
  });
});

describe('session quotas', () => {
  let t: TestApp;
  afterEach(async () => {
    await t.app.close();
  });

  const create = (key: string, name: string, namespace?: string): Promise<LightMyRequestResponse> =>
    t.app.inject({
      method: 'POST',
      url: '/v1/sessions',
      headers: auth(key),
      payload: { name, ...(namespace ? { namespace } : {}) },
    });

  it('refuses a key past its session quota with 403 quota-exceeded naming it; existing names still answer', async () => {
    t = await buildTestApp({ GATEWAY_MAX_SESSIONS_PER_KEY: '2' });
    expect((await create(KEYS.a, 's1')).statusCode).toBe(201);
    expect((await create(KEYS.a, 's2')).statusCode).toBe(201);
    const refused = await create(KEYS.a, 's3');
    const body = expectProblem(refused, 403, 'quota-exceeded');
    expect(body).toMatchObject({ quota: 'sessions-per-key', limit: 2, used: 2 });
    expect(body.detail).toMatch(/API key a has 2 sessions/);
    expect(t.store.calls).not.toContain('create team-a/s3');
    // Create-or-get of an existing session is no new session.
    expect((await create(KEYS.a, 's1')).statusCode).toBe(200);
    // Another key in the same namespace has its own count.
    expect((await create(KEYS.both, 's4', 'team-a')).statusCode).toBe(201);
    // The sessions carry the creating key's id.
    expect(t.store.get('team-a', 's1')!.metadata.annotations?.[ANNOTATIONS.createdByKey]).toBe('a');
  });

  it('counts a namespace over all keys, and no longer counts sessions being deleted', async () => {
    t = await buildTestApp({ GATEWAY_MAX_SESSIONS_PER_NAMESPACE: '2' });
    t.store.put(session('old', 'team-a', deleting));
    expect((await create(KEYS.a, 's1')).statusCode).toBe(201);
    expect((await create(KEYS.both, 's2', 'team-a')).statusCode).toBe(201);
    const body = expectProblem(await create(KEYS.a, 's3'), 403, 'quota-exceeded');
    expect(body).toMatchObject({ quota: 'sessions-per-namespace', limit: 2 });
    expect((await create(KEYS.b, 's3')).statusCode).toBe(201); // team-b has room
  });

  it('counts parallel creations before the watch delivers them', async () => {
    t = await buildTestApp({ GATEWAY_MAX_SESSIONS_PER_KEY: '3' });
    // The fake store's creations reach its cache only when the test says so (a lagging watch).
    const created = new Map<string, unknown>();
    t.store.createOrGet = (s) => {
      created.set(s.metadata.name!, s);
      return Promise.resolve({ session: structuredClone(s), created: true });
    };
    const codes = await Promise.all(['p1', 'p2', 'p3', 'p4', 'p5'].map((n) => create(KEYS.a, n)));
    expect(codes.map((r) => r.statusCode).sort()).toEqual([201, 201, 201, 403, 403]);
  });

  it('refuses a session env over the total size with 422 (the CRD caps it too)', async () => {
    t = await buildTestApp({ GATEWAY_MAX_SESSION_ENV_BYTES: '1000' });
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/sessions',
      headers: auth(KEYS.a),
      payload: { name: 'big-env', env: { A: 'x'.repeat(600), B: 'y'.repeat(600) } },
    });
    const body = expectProblem(res, 422, 'policy-violation');
    expect(body.detail).toMatch(/env holds 1202 bytes.*limit is 1000/);
    expect(t.store.calls).toEqual([]);
  });
});

describe('rough edges', () => {
  let t: TestApp;
  afterEach(async () => {
    await t.app.close();
  });

  it('accepts DELETE with Content-Type: application/json and no body (many clients send it)', async () => {
    t = await buildTestApp();
    t.store.put(session('demo', 'team-a', ready()));
    const res = await t.app.inject({
      method: 'DELETE',
      url: '/v1/sessions/demo',
      headers: { ...auth(KEYS.a), 'content-type': 'application/json', 'content-length': '0' },
    });
    expect(res.statusCode).toBe(204);
  });

  it('still refuses an empty JSON body where a body is required, and malformed JSON anywhere', async () => {
    t = await buildTestApp();
    const post = await t.app.inject({
      method: 'POST',
      url: '/v1/sessions/demo/exec',
      headers: { ...auth(KEYS.a), 'content-type': 'application/json', 'content-length': '0' },
    });
    expectProblem(post, 400, 'invalid-request');
    const del = await t.app.inject({
      method: 'DELETE',
      url: '/v1/sessions/demo',
      headers: { ...auth(KEYS.a), 'content-type': 'application/json' },
      payload: '{"a":',
    });
    expectProblem(del, 400, 'invalid-request');
    const poisoned = await t.app.inject({
      method: 'POST',
      url: '/v1/sessions',
      headers: { ...auth(KEYS.a), 'content-type': 'application/json' },
      payload: '{"name":"x","__proto__":{"admin":true}}',
    });
    expectProblem(poisoned, 400, 'invalid-request');
  });
});
