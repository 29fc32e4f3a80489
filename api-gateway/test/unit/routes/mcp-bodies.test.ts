/**
 * Regression (issue 25): `POST /mcp` with a JSON body that is not JSON-RPC (`{"command":"id"}`,
 * `[[[]]]`) or with `Content-Type: text/plain` answered 500 {"code":-32603} (24 of 3,000 hostile
 * requests). Every malformed body or content type now gets a 4xx with a JSON-RPC error object
 * (id null): a table of the known shapes, then a seeded loop over random junk (0 answers >= 500).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { KEYS, auth, buildTestApp, type TestApp } from '../../helpers/app.js';

const ACCEPT = { accept: 'application/json, text/event-stream' };
const JSON_TYPE = 'application/json';

interface Answer {
  status: number;
  body: { jsonrpc?: string; error?: { code?: number; message?: string }; id?: unknown };
}

describe('POST /mcp with bodies that are not JSON-RPC', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp();
  });
  afterAll(async () => {
    await t.app.close();
  });

  const post = async (payload: string | Buffer, contentType?: string, accept = true): Promise<Answer> => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/mcp',
      headers: {
        ...auth(KEYS.a),
        ...(accept ? ACCEPT : {}),
        ...(contentType !== undefined ? { 'content-type': contentType } : {}),
      },
      payload,
    });
    let body: Answer['body'] = {};
    try {
      body = res.json();
    } catch {
      body = {};
    }
    return { status: res.statusCode, body };
  };

  const request = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
  const table: Array<[string, string, string | undefined, number, number]> = [
    ['an object that is not JSON-RPC', '{"command":"id"}', JSON_TYPE, 400, -32600],
    ['nested empty arrays', '[[[]]]', JSON_TYPE, 400, -32600],
    ['an empty batch', '[]', JSON_TYPE, 400, -32600],
    ['a string', '"x"', JSON_TYPE, 400, -32600],
    ['null', 'null', JSON_TYPE, 400, -32600],
    ['a number', '7', JSON_TYPE, 400, -32600],
    ['a negative float', '-1.5e3', JSON_TYPE, 400, -32600],
    ['true', 'true', JSON_TYPE, 400, -32600],
    ['jsonrpc alone', '{"jsonrpc":"2.0"}', JSON_TYPE, 400, -32600],
    ['jsonrpc 1.0', '{"jsonrpc":"1.0","id":1,"method":"ping"}', JSON_TYPE, 400, -32600],
    ['a batch with one bad item', `[${request},{"a":1}]`, JSON_TYPE, 400, -32600],
    ['a batch of 101', `[${Array(101).fill(request).join(',')}]`, JSON_TYPE, 400, -32600],
    // Found by the hostile-requests e2e (seed 833510): the SDK answers by id, so a repeated id left
    // one request unanswered and the gateway answered 500.
    [
      'a batch repeating a request id',
      '[{"jsonrpc":"2.0","method":"ping","id":1},{"jsonrpc":"2.0","method":"ping","id":1}]',
      JSON_TYPE,
      400,
      -32600,
    ],
    ['broken JSON', '{', JSON_TYPE, 400, -32700],
    ['an empty body', '', JSON_TYPE, 400, -32700],
    ['a __proto__ key', '{"__proto__":{"x":1},"jsonrpc":"2.0"}', JSON_TYPE, 400, -32700],
    ['JSON-RPC as text/plain', request, 'text/plain', 415, -32600],
    ['a form body', 'jsonrpc=2.0&method=ping', 'application/x-www-form-urlencoded', 415, -32600],
    ['no content type', request, undefined, 415, -32600],
    ['multipart', '--x\r\n\r\n--x--', 'multipart/form-data; boundary=x', 415, -32600],
    ['application/json-seq', request, 'application/json-seq', 415, -32600],
  ];

  it.each(table)(
    '%s (body %j, type %s): %i, JSON-RPC error %i',
    async (_what, payload, type, status, code) => {
      const answer = await post(payload, type);
      expect(answer.status).toBe(status);
      expect(answer.body).toMatchObject({ jsonrpc: '2.0', error: { code }, id: null });
    },
  );

  it('still serves JSON-RPC (charset parameter included), and the SDK’s own 406 is a 4xx', async () => {
    const ok = await post(request, 'application/json; charset=utf-8');
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ jsonrpc: '2.0', id: 1, result: { tools: expect.any(Array) as unknown } });
    const noAccept = await post(request, JSON_TYPE, false);
    expect(noAccept.status).toBe(406);
    expect(noAccept.body).toMatchObject({ jsonrpc: '2.0', error: { code: -32000 }, id: null });
  });

  it('answers no random junk with a 5xx (1,000 seeded bodies and content types)', async () => {
    let seed = 25;
    const rand = (): number => {
      // mulberry32: a small seeded generator, so a failure can be replayed.
      seed = (seed + 0x6d2b79f5) | 0;
      let x = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
      return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
    };
    const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)]!;
    const methods = ['tools/list', 'tools/call', 'initialize', 'ping', 'notifications/initialized', 'x'];
    const value = (depth: number): unknown => {
      const kind = Math.floor(rand() * (depth > 3 ? 5 : 8));
      if (kind === 0) return null;
      if (kind === 1) return rand() < 0.5;
      if (kind === 2) return Math.floor(rand() * 2000) - 1000;
      if (kind === 3) return pick(['', 'x', '2.0', 'exec', '\u0000', '\u{1F600}', 'a'.repeat(50)]);
      if (kind === 4) return rand() * 1e6;
      if (kind === 5) return Array.from({ length: Math.floor(rand() * 4) }, () => value(depth + 1));
      const keys = ['jsonrpc', 'id', 'method', 'params', 'result', 'error', 'name', 'arguments', 'x'];
      return Object.fromEntries(
        Array.from({ length: Math.floor(rand() * 5) }, () => [pick(keys), value(depth + 1)]),
      );
    };
    const message = (): unknown => ({
      ...(rand() < 0.9 ? { jsonrpc: rand() < 0.8 ? '2.0' : value(3) } : {}),
      ...(rand() < 0.7 ? { id: rand() < 0.7 ? Math.floor(rand() * 100) : value(3) } : {}),
      ...(rand() < 0.8 ? { method: rand() < 0.8 ? pick(methods) : value(3) } : {}),
      ...(rand() < 0.6 ? { params: value(1) } : {}),
    });
    const body = (): string | Buffer => {
      const kind = Math.floor(rand() * 5);
      if (kind === 0) return Buffer.from(Array.from({ length: Math.floor(rand() * 64) }, () => rand() * 256));
      if (kind === 1) return JSON.stringify(value(0));
      if (kind === 2) return JSON.stringify(Array.from({ length: Math.floor(rand() * 3) }, message));
      if (kind === 3) return JSON.stringify(message()).slice(0, Math.floor(rand() * 80));
      return JSON.stringify(message());
    };
    const types = [
      JSON_TYPE,
      JSON_TYPE,
      JSON_TYPE,
      'text/plain',
      'application/x-www-form-urlencoded',
      undefined,
    ];
    const statuses = new Map<number, number>();
    const bad: string[] = [];
    for (let i = 0; i < 1000; i++) {
      const payload = body();
      const answer = await post(payload, pick(types), rand() < 0.95);
      statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
      const rpcError = answer.body.jsonrpc === '2.0' && typeof answer.body.error?.code === 'number';
      if (answer.status >= 500 || (answer.status >= 400 && !rpcError)) {
        bad.push(`${answer.status} ${JSON.stringify(answer.body)} for ${String(payload).slice(0, 120)}`);
      }
    }
    expect(bad).toEqual([]);
    // The loop reached the SDK too (some 2xx), not only the refusals.
    expect([...statuses.keys()].some((s) => s < 300)).toBe(true);
  }, 120_000);
});
