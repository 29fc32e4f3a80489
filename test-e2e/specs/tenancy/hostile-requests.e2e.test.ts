/**
 * e2e (issue 25): 10,000 hostile requests against the in-cluster gateway get 0 answers of 5xx.
 * `POST /mcp` with JSON that is not JSON-RPC (`{"command":"id"}`, `[[[]]]`) or with
 * `Content-Type: text/plain` once answered 500 (24 of 3,000 hostile requests). The requests mix
 * every route family (MCP, sessions, exec, files, processes, ports, terminal) with malformed
 * bodies, odd content types, odd encodings of paths and parameters, deep nesting and binary junk,
 * from a seeded generator (the seed is printed, so a failure can be replayed). Sent by an
 * authenticated key, paced under the gateway's default per-key rate limit (a 429 is a 4xx and
 * fine, but the requests are meant to reach the handlers).
 *
 * Needs the platform (make platform-up).
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { kubeClients } from '../../src/framework/index.js';
import { deleteSession, gatewayClient, namespaceOf } from '../isolation/support.js';

const NS = namespaceOf('e2e');
const BASE = process.env.E2E_GATEWAY_URL ?? '';
const KEY = process.env.E2E_GATEWAY_API_KEY ?? '';
const TOTAL = Number(process.env.E2E_HOSTILE_REQUESTS ?? 10_000);
const CONCURRENCY = 8;
/** Requests per second, under the default 100/s per key and replica of two replicas. */
const RATE = 180;
const kube = kubeClients();
const SESSION = `fuzz-${randomBytes(3).toString('hex')}`;
const SEED = Number(process.env.E2E_HOSTILE_SEED ?? Date.now() % 1_000_000);

/** A small seeded PRNG (mulberry32), so a run can be replayed from its printed seed. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const BODIES: Array<string | Uint8Array> = [
  '{"command":"id"}',
  '[[[]]]',
  '[]',
  '[{}]',
  'null',
  '1',
  '"x"',
  'true',
  '{}',
  '{"jsonrpc":"2.0"}',
  '{"jsonrpc":"2.0","id":1}',
  '{"jsonrpc":"2.0","method":1,"id":{}}',
  '{"jsonrpc":"2.0","method":"tools/call","id":1,"params":[]}',
  '{"jsonrpc":"2.0","method":"tools/call","id":1,"params":{"name":"exec","arguments":"x"}}',
  '{"jsonrpc":"2.0","method":"tools/call","id":1,"params":{"name":"exec","arguments":{"session":[],"command":{}}}}',
  '{"jsonrpc":"2.0","method":"initialize","id":null,"params":{"protocolVersion":7}}',
  '[{"jsonrpc":"2.0","method":"ping","id":1},{"jsonrpc":"2.0","method":"ping","id":1}]',
  '{"jsonrpc":"1.0","method":"ping","id":1}',
  '{"__proto__":{"polluted":1},"constructor":{"prototype":{"x":1}}}',
  '{"command":"' + 'a'.repeat(70_000) + '"}',
  '['.repeat(5_000) + ']'.repeat(5_000),
  '{"a":'.repeat(2_000) + '1' + '}'.repeat(2_000),
  '{"command":"echo \\ud800"}',
  '{"name":"../../etc","image":"x"}',
  '{"name":"UPPER","idleTimeoutSeconds":-1}',
  '{"name":"' + 'n'.repeat(300) + '"}',
  '{"command":"true","timeoutSeconds":1e309}',
  '{"command":"true","timeoutSeconds":"60"}',
  '{"command":"true","env":{"":"x","A=B":"y"}}',
  '{"command":"true","stdin":"%%%","stdinEncoding":"base64"}',
  '{"signal":"SIGKILL; rm -rf /"}',
  '{',
  '{"a":1,}',
  "{'a':1}",
  '\u0000\u0001\u0002',
  new Uint8Array([0xff, 0xfe, 0x7b, 0x00, 0x22, 0x00]),
  new Uint8Array([0xc3, 0x28, 0xa0, 0xa1, 0xe2, 0x28, 0xa1]),
  '',
];

const CONTENT_TYPES: Array<string | undefined> = [
  'application/json',
  'application/json; charset=utf-8',
  'application/json; charset=utf-16',
  'text/plain',
  'text/plain; charset=utf-8',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/octet-stream',
  'application/problem+json',
  'application/jsonx',
  '*/*',
  'text/event-stream',
  'application/json, text/plain',
  ';;;',
  undefined,
];

const TARGETS: Array<[string, string]> = [
  ['POST', '/mcp'],
  ['POST', '/mcp'],
  ['POST', '/mcp'],
  ['GET', '/mcp'],
  ['DELETE', '/mcp'],
  ['POST', `/v1/sessions/${SESSION}/exec`],
  ['POST', `/v1/sessions/${SESSION}/exec/stream`],
  ['PUT', `/v1/sessions/${SESSION}/files/fuzz.txt`],
  ['PUT', `/v1/sessions/${SESSION}/files/%2e%2e/%2e%2e/etc/passwd`],
  ['GET', `/v1/sessions/${SESSION}/files/%00`],
  ['GET', `/v1/sessions/${SESSION}/files/a%ZZb`],
  ['POST', `/v1/sessions/${SESSION}/processes`],
  ['POST', `/v1/sessions/${SESSION}/processes/nope/signal`],
  ['GET', `/v1/sessions/${SESSION}/processes/%2F/output`],
  ['POST', `/v1/sessions/${SESSION}/suspend`],
  ['GET', `/v1/sessions/${SESSION}/terminal`],
  ['GET', `/v1/sessions/no-such-${SESSION}/ports/8000/%2F%3F%23`],
  ['GET', `/v1/sessions/no-such-${SESSION}/ports/0/x`],
  ['GET', `/v1/sessions/no-such-${SESSION}/ports/99999/x`],
  ['GET', '/v1/sessions/%E0%A4%A'],
  ['GET', '/v1/sessions/' + 'x'.repeat(4_000)],
  ['PATCH', '/v1/sessions'],
  ['OPTIONS', '/v1/sessions'],
  // Never POST /v1/sessions: a body that loses its unknown members ({} after removeAdditional)
  // creates a session, and 10,000 of them would hit the namespace's quota.
  ['GET', '/v1/sessions?namespace[]=x'],
];

/**
 * One request on a connection of its own (a connection the gateway closes after a refused body
 * must not fail the next request, as a pooled client would report); the status, or a throw when
 * no answer came (the gateway cut the connection or timed out: as bad as a 5xx).
 */
function send(
  method: string,
  path: string,
  headers: Record<string, string>,
  body: string | Uint8Array | undefined,
): Promise<number> {
  const url = new URL(path, BASE);
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers, agent: false, timeout: 30_000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? -1));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('no answer in 30 s')));
    req.on('error', reject);
    req.end(body);
  });
}

describe('10,000 hostile requests get no 5xx', () => {
  beforeAll(async () => {
    const c = gatewayClient('e2e');
    await c.createSession({ name: SESSION });
    await c.waitUntilReady(SESSION, { timeoutMs: 180_000 });
  }, 200_000);

  afterAll(async () => {
    await deleteSession(kube, NS, SESSION);
  });

  it(`sends ${TOTAL} malformed requests (seeded) and gets only answers below 500`, async () => {
    const random = rng(SEED);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
    const statuses = new Map<number, number>();
    const fives: string[] = [];
    let next = 0;
    const started = performance.now();
    const worker = async (): Promise<void> => {
      while (next < TOTAL) {
        const i = next++;
        // Paced: request i leaves no earlier than i / RATE seconds after the start.
        const wait = started + (i * 1000) / RATE - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        const [method, path] = pick(TARGETS);
        const type = pick(CONTENT_TYPES);
        const body = method === 'GET' || method === 'OPTIONS' ? undefined : pick(BODIES);
        const sep = path.includes('?') ? '&' : '?';
        const headers: Record<string, string> = { authorization: `Bearer ${KEY}` };
        if (type !== undefined && body !== undefined) headers['content-type'] = type;
        if (path === '/mcp')
          headers.accept = pick(['application/json, text/event-stream', 'text/html', '*/*']);
        let status: number;
        try {
          status = await send(method, `${path}${sep}namespace=${NS}`, headers, body);
        } catch (e) {
          status = -1;
          fives.push(`#${i} ${method} ${path.slice(0, 60)} [${type}]: no answer (${(e as Error).message})`);
        }
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
        if (status >= 500) {
          const shown = typeof body === 'string' ? body.slice(0, 60) : `<${body?.length ?? 0} bytes>`;
          fives.push(`#${i} ${method} ${path.slice(0, 60)} [${type}] ${shown} -> ${status}`);
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    process.stdout.write(
      `hostile requests: ${TOTAL} (seed ${SEED}) in ${((performance.now() - started) / 1000).toFixed(1)} s; ` +
        `statuses ${JSON.stringify(Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0])))}\n`,
    );
    expect(fives.slice(0, 20)).toEqual([]);
  }, 300_000);
});
