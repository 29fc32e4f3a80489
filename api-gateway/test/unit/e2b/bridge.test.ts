/**
 * The credential bridge and the gateway's own hooks on E2B routes (auth-bridge.ts, keys.ts): the
 * E2B routes get the REST API's authentication, per-key limits and answers in E2B's shapes.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { KEYS } from '../../helpers/app.js';
import { ready, session } from '../../helpers/sessions.js';
import { startE2bApp, type E2bApp } from './helpers/e2b-app.js';

const LIST = '/e2b/envd/process.Process/List';

describe('E2B credentials through the gateway hooks', () => {
  let e: E2bApp;
  let token: string;
  beforeAll(async () => {
    e = await startE2bApp({ env: { GATEWAY_KEY_MAX_REQUESTS_PER_SECOND: '3' } });
    // A session the fake operator does not touch (already Ready; its agent is never dialed here).
    e.store.put(
      session(
        's1',
        'team-a',
        ready('127.0.0.9'),
        (s) => void (s.metadata.annotations = { 'sandbox.dev/created-by-key': 'a' }),
      ),
    );
    token = e.tokens.token({ namespace: 'team-a', name: 's1', uid: 'uid-s1' });
  });
  afterAll(async () => {
    await e.close();
  });

  it('control API: no key or a bad key is 401 in E2B JSON; health needs none', async () => {
    const none = await e.app.inject({ method: 'GET', url: '/e2b/v2/sandboxes' });
    expect(none.statusCode).toBe(401);
    expect(none.json()).toEqual({ code: 401, message: 'missing bearer API key' });
    const bad = await e.app.inject({
      method: 'GET',
      url: '/e2b/v2/sandboxes',
      headers: { 'x-api-key': 'nope' },
    });
    expect(bad.json()).toEqual({ code: 401, message: 'invalid API key' });
    expect((await e.app.inject({ method: 'GET', url: '/e2b/health' })).statusCode).toBe(200);
    const unknown = await e.app.inject({
      method: 'GET',
      url: '/e2b/nothing',
      headers: { 'x-api-key': KEYS.a },
    });
    expect(unknown.json()).toMatchObject({ code: 404 });
  });

  it('envd: no token 401 before anything is looked up; an unknown sandbox 502 (unary) or Unavailable (stream)', async () => {
    const headers = { 'content-type': 'application/json', 'e2b-sandbox-id': 's1.team-a' };
    const none = await e.app.inject({ method: 'POST', url: LIST, headers, payload: '{}' });
    expect(none.statusCode).toBe(401);
    expect(none.json()).toMatchObject({ code: 'unauthenticated' });
    const gone = await e.app.inject({
      method: 'POST',
      url: LIST,
      headers: { ...headers, 'x-access-token': token, 'e2b-sandbox-id': 'nope.team-a' },
      payload: '{}',
    });
    expect(gone.statusCode).toBe(502);
    expect(gone.json()).toEqual({ code: 'unavailable', message: 'The sandbox nope.team-a was not found' });
    const unserved = await e.app.inject({
      method: 'POST',
      url: LIST,
      headers: { ...headers, 'x-access-token': token, 'e2b-sandbox-id': 's1.kube-system' },
      payload: '{}',
    });
    expect(unserved.statusCode).toBe(502);
    const stream = await e.app.inject({
      method: 'POST',
      url: '/e2b/envd/process.Process/Start',
      headers: {
        'content-type': 'application/connect+json',
        'x-access-token': token,
        'e2b-sandbox-id': 'nope.team-a',
      },
      payload: Buffer.from([0, 0, 0, 0, 2, 0x7b, 0x7d]),
    });
    expect(stream.statusCode).toBe(200);
    expect(stream.headers['content-type']).toBe('application/connect+json');
    expect(JSON.parse(stream.rawPayload.subarray(5).toString())).toMatchObject({
      error: { code: 'unavailable' },
    });
  });

  it('SECURITY: a ticket-shaped bearer never authenticates on the REST API', async () => {
    const r = await e.app.inject({
      method: 'GET',
      url: '/v1/sessions',
      headers: { authorization: `Bearer e2b-ticket.${'a'.repeat(64)}` },
    });
    expect(r.statusCode).toBe(401);
  });

  it("limits: the key's requests per second count REST, control and envd calls (of its sessions) together", async () => {
    await new Promise((r) => setTimeout(r, 1100)); // a fresh one-second window
    const rest = await e.app.inject({
      method: 'GET',
      url: '/v1/sessions',
      headers: { authorization: `Bearer ${KEYS.a}` },
    });
    const control = await e.app.inject({
      method: 'GET',
      url: '/e2b/v2/sandboxes',
      headers: { 'x-api-key': KEYS.a },
    });
    const envd = await e.app.inject({
      method: 'GET',
      url: '/e2b/envd/health',
      headers: { 'x-access-token': token, 'e2b-sandbox-id': 's1.team-a' },
    });
    expect([rest.statusCode, control.statusCode, envd.statusCode]).toEqual([200, 200, 204]);
    const fourth = await e.app.inject({
      method: 'POST',
      url: LIST,
      headers: { 'content-type': 'application/json', 'x-access-token': token, 'e2b-sandbox-id': 's1.team-a' },
      payload: '{}',
    });
    expect(fourth.statusCode).toBe(429);
    expect(fourth.json()).toMatchObject({ code: 'resource_exhausted' });
    const fifth = await e.app.inject({
      method: 'GET',
      url: '/e2b/v2/sandboxes',
      headers: { 'x-api-key': KEYS.a },
    });
    expect(fifth.statusCode).toBe(429);
    expect(fifth.json()).toMatchObject({ code: 429 });
    // Another key has its own window.
    expect(
      (await e.app.inject({ method: 'GET', url: '/e2b/v2/sandboxes', headers: { 'x-api-key': KEYS.b } }))
        .statusCode,
    ).toBe(200);
  });
});
