import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import type { LightMyRequestResponse } from 'fastify';

import { ProblemError } from '../../../src/errors.js';
import { KEYS, auth, buildTestApp, type TestApp } from '../../helpers/app.js';
import { expectProblem } from '../../helpers/problem.js';
import { ready, session } from '../../helpers/sessions.js';

describe('file routes', () => {
  let t: TestApp;
  beforeEach(async () => {
    t = await buildTestApp();
    t.store.put(session('demo', 'team-a', ready()));
  });
  afterEach(async () => {
    await t.app.close();
  });

  const put = (
    path: string,
    payload: Buffer | string,
    contentType = 'application/octet-stream',
  ): Promise<LightMyRequestResponse> =>
    t.app.inject({
      method: 'PUT',
      url: `/v1/sessions/demo/files/${path}`,
      headers: { ...auth(KEYS.a), 'content-type': contentType },
      payload,
    });

  it('uploads raw bytes (201) and downloads them again', async () => {
    const bytes = Buffer.from([0, 1, 2, 255, 10]);
    const up = await put('dir/data.bin', bytes);
    expect(up.statusCode).toBe(201);
    expect(up.json()).toEqual({ path: 'dir/data.bin', size: 5 });
    const down = await t.app.inject({
      method: 'GET',
      url: '/v1/sessions/demo/files/dir/data.bin',
      headers: auth(KEYS.a),
    });
    expect(down.statusCode).toBe(200);
    expect(down.headers['content-type']).toBe('application/octet-stream');
    expect(down.rawPayload).toEqual(bytes);
    expect(t.activity.touched).toEqual(['team-a/demo', 'team-a/demo']);
  });

  it('keeps a JSON file as bytes whatever its content type', async () => {
    const up = await put('conf.json', '{"a": 1}', 'application/json');
    expect(up.statusCode).toBe(201);
    expect(t.agent.files.get('conf.json')!.toString()).toBe('{"a": 1}');
  });

  it('accepts an upload without a content type (curl -T)', async () => {
    const res = await t.app.inject({
      method: 'PUT',
      url: '/v1/sessions/demo/files/plain.txt',
      headers: auth(KEYS.a),
      payload: Buffer.from('no type'),
    });
    expect(res.statusCode).toBe(201);
    expect(t.agent.files.get('plain.txt')!.toString()).toBe('no type');
  });

  it('normalizes empty and "." segments', async () => {
    await put('a//./b.txt', 'x');
    expect(t.agent.calls[0]!.path).toBe('a/b.txt');
  });

  // Plain `..` segments are already resolved by URL normalization (they never reach the route);
  // an encoded slash survives it and is decoded into the path parameter.
  it.each(['a%2F..%2F..%2Fetc%2Fpasswd', '..%2Fsecret'])(
    'refuses %s with 403 path-forbidden',
    async (path) => {
      const res = await put(path, 'x');
      expectProblem(res, 403, 'path-forbidden');
      expect(t.agent.calls).toHaveLength(0);
    },
  );

  it('refuses an absolute path (encoded leading slash) with 403', async () => {
    const res = await t.app.inject({
      method: 'GET',
      url: '/v1/sessions/demo/files/%2Fetc%2Fshadow',
      headers: auth(KEYS.a),
    });
    expectProblem(res, 403, 'path-forbidden');
  });

  it('refuses an upload over the file size limit with 413', async () => {
    const res = await put('big.bin', Buffer.alloc(131073));
    expectProblem(res, 413, 'payload-too-large');
    expect(t.agent.calls).toHaveLength(0);
  });

  it('accepts an upload of exactly the limit', async () => {
    expect((await put('edge.bin', Buffer.alloc(131072))).statusCode).toBe(201);
  });

  it('passes the agent problems through (404 not-found)', async () => {
    t.agent.error = new ProblemError('not-found', 'no such file');
    const res = await t.app.inject({
      method: 'GET',
      url: '/v1/sessions/demo/files/missing.txt',
      headers: auth(KEYS.a),
    });
    expectProblem(res, 404, 'not-found');
  });

  it("refuses another tenant's namespace with 403 and an unknown session with 404", async () => {
    const other = await t.app.inject({
      method: 'GET',
      url: '/v1/sessions/demo/files/a?namespace=team-b',
      headers: auth(KEYS.a),
    });
    const unknown = await t.app.inject({
      method: 'GET',
      url: '/v1/sessions/nope/files/a',
      headers: auth(KEYS.a),
    });
    expectProblem(other, 403, 'forbidden');
    expectProblem(unknown, 404, 'session-not-found');
  });

  it('answers 401 with a wrong key', async () => {
    const res = await t.app.inject({
      method: 'GET',
      url: '/v1/sessions/demo/files/a',
      headers: auth('wrong-key-wrong-key-wrong'),
    });
    expectProblem(res, 401, 'unauthorized');
  });
});
