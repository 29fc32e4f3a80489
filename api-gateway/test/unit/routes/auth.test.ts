import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';

import { KEYS, buildTestApp, type TestApp } from '../../helpers/app.js';
import { expectProblem } from '../../helpers/problem.js';

describe('authentication', () => {
  let t: TestApp;
  beforeEach(async () => {
    t = await buildTestApp();
  });
  afterEach(async () => {
    await t.app.close();
  });

  it.each([
    ['no header', undefined],
    ['an empty bearer', 'Bearer '],
    ['another scheme', `Basic ${KEYS.a}`],
    ['a wrong key', 'Bearer not-a-key-at-all-0123456789'],
    ['a key with a suffix', `Bearer ${KEYS.a}x`],
  ])('answers 401 with WWW-Authenticate for %s', async (_what, header) => {
    const res = await t.app.inject({
      method: 'GET',
      url: '/v1/sessions',
      headers: header ? { authorization: header } : {},
    });
    expectProblem(res, 401, 'unauthorized');
    expect(res.headers['www-authenticate']).toBe('Bearer');
  });

  it('accepts a hashed key and a plain key, case-insensitive scheme', async () => {
    const hashed = await t.app.inject({
      method: 'GET',
      url: '/v1/sessions',
      headers: { authorization: `bearer ${KEYS.a}` },
    });
    const plain = await t.app.inject({
      method: 'GET',
      url: '/v1/sessions',
      headers: { authorization: `Bearer ${KEYS.b}` },
    });
    expect([hashed.statusCode, plain.statusCode]).toEqual([200, 200]);
  });

  it('authenticates unknown routes too (no route probing without a key)', async () => {
    expectProblem(await t.app.inject({ method: 'GET', url: '/v2/whatever' }), 401, 'unauthorized');
    const withKey = await t.app.inject({
      method: 'GET',
      url: '/v2/whatever',
      headers: { authorization: `Bearer ${KEYS.a}` },
    });
    expectProblem(withKey, 404, 'not-found');
  });

  it('answers 400 for a malformed namespace and 403 for a foreign one', async () => {
    const headers = { authorization: `Bearer ${KEYS.a}` };
    expectProblem(
      await t.app.inject({ method: 'GET', url: '/v1/sessions?namespace=Team_A', headers }),
      400,
      'invalid-request',
    );
    expectProblem(
      await t.app.inject({ method: 'GET', url: '/v1/sessions?namespace=kube-system', headers }),
      403,
      'forbidden',
    );
  });
});
