/**
 * e2e (issue 25): one tenant cannot starve another's port route. The gateway once had one
 * keep-alive socket pool toward sandbox servers for all tenants (512 sockets, no idle timeout):
 * one key holding them all left other tenants' port requests ending in 504. Here tenant A sends
 * 1,000 port-route requests at once to a server in its sandbox that answers each after 3 s (so
 * the gateway would open up to 1,000 upstream connections, which then sit idle in its pool),
 * while tenant B measures its own port route: every one of B's requests must succeed, and its
 * p50 while A holds them and after (A's sockets idle) must stay within 2x of its quiet p50,
 * measured before and after (figures printed).
 *
 * Two protections stand in A's way: the per-key limits (32 requests in flight and 100/s per key
 * and replica by default, so most of A's 1,000 get 429) and the per-key upstream pool (64 sockets,
 * 30 s idle). Shown failing with both off (2026-12-06, local cluster: GATEWAY_KEY_MAX_CONCURRENT_
 * REQUESTS=0, GATEWAY_KEY_MAX_REQUESTS_PER_SECOND=0 and the old shared pool of 512 sockets put
 * back): B's first request under load answered 504 upstream-timeout. With the limits off and the
 * per-key pool on: passed twice, B 1.02x / 0.91x its quiet p50, A 128x200 (64 per replica) and
 * 872x504 from its own queue. With the defaults: 0.94x, A 64x200 and 936x429.
 *
 * Needs the platform (make platform-up).
 */
import { randomBytes } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { kubeClients } from '../../src/framework/index.js';
import { deleteSession, gatewayClient, namespaceOf } from '../isolation/support.js';

const NS_A = namespaceOf('e2e');
const NS_B = namespaceOf('other');
const BASE = process.env.E2E_GATEWAY_URL ?? '';
const KEY = { a: process.env.E2E_GATEWAY_API_KEY ?? '', b: process.env.E2E_OTHER_API_KEY ?? '' };
const READY_MS = 180_000;
const PORT = 8000;
const HOLD = 1_000;
const SAMPLES = 40;
const kube = kubeClients();
const suffix = randomBytes(3).toString('hex');
const A = `hog-${suffix}`;
const B = `starved-${suffix}`;

/** A threaded server: answers after `delay` seconds. */
const server = (delay: number): string =>
  [
    `cat > /workspace/srv.py <<'PY'`,
    'import http.server, time',
    'class H(http.server.BaseHTTPRequestHandler):',
    '    def do_GET(self):',
    `        time.sleep(${delay})`,
    '        self.send_response(200); self.send_header("content-length", "2"); self.end_headers(); self.wfile.write(b"ok")',
    '    def log_message(self, *a): pass',
    'class S(http.server.ThreadingHTTPServer):',
    '    request_queue_size = 2048',
    '    daemon_threads = True',
    `S(("", ${PORT}), H).serve_forever()`,
    'PY',
    'nohup python3 /workspace/srv.py >/dev/null 2>&1 &',
    `for i in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/${PORT}) 2>/dev/null && break; sleep 0.1; done`,
  ].join('\n');

function route(key: string, ns: string, name: string, path: string): Promise<Response> {
  return fetch(`${BASE}/v1/sessions/${name}/ports/${PORT}/${path}?namespace=${ns}`, {
    headers: { authorization: `Bearer ${key}` },
  });
}

/** B's port-route latencies (ms) over `n` sequential requests; every answer must be 200 "ok". */
async function measureB(n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const res = await route(KEY.b, NS_B, B, `b${i}`);
    const body = await res.text();
    out.push(performance.now() - t0);
    expect(`${res.status} ${body}`).toBe('200 ok');
  }
  return out;
}

const p50 = (xs: number[]): number => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;

describe('port-route fairness between tenants', () => {
  beforeAll(async () => {
    const a = gatewayClient('e2e');
    const b = gatewayClient('other');
    await Promise.all([a.createSession({ name: A }), b.createSession({ name: B })]);
    await Promise.all([
      a.waitUntilReady(A, { timeoutMs: READY_MS }),
      b.waitUntilReady(B, { timeoutMs: READY_MS }),
    ]);
    expect((await a.exec(A, { command: server(3), timeoutSeconds: 30 })).exitCode).toBe(0);
    expect((await b.exec(B, { command: server(0), timeoutSeconds: 30 })).exitCode).toBe(0);
  }, READY_MS * 2);

  afterAll(async () => {
    await deleteSession(kube, NS_A, A);
    await deleteSession(kube, NS_B, B);
  });

  it(`tenant A holding ${HOLD} upstream connections does not starve tenant B`, async () => {
    await measureB(5); // warm-up: connections and caches
    const quiet = await measureB(SAMPLES);
    const answers = new Map<string, number>();
    const hog = Promise.all(
      Array.from({ length: HOLD }, async (_, i) => {
        let key: string;
        try {
          const res = await route(KEY.a, NS_A, A, `a${i}`);
          await res.arrayBuffer();
          key = String(res.status);
        } catch (e) {
          key = `error ${(e as Error).message}`;
        }
        answers.set(key, (answers.get(key) ?? 0) + 1);
      }),
    );
    await new Promise((r) => setTimeout(r, 500)); // A's requests are in the gateway
    const busy = await measureB(SAMPLES);
    await hog;
    const idle = await measureB(SAMPLES); // A's connections now idle in the gateway's pools
    await new Promise((r) => setTimeout(r, 1000));
    // Quiet again: the baseline is taken on both sides of the load, so a machine that got busier
    // or quieter meanwhile (other work on a shared node) moves both.
    const quiet2 = await measureB(SAMPLES);
    const baseline = p50([...quiet, ...quiet2]);
    const ratio = Math.max(p50(busy), p50(idle)) / baseline;
    process.stdout.write(
      `port-route fairness: B p50 quiet ${p50(quiet).toFixed(2)} / ${p50(quiet2).toFixed(2)} ms, while A holds ${HOLD} ` +
        `${p50(busy).toFixed(2)} ms, after (A's sockets idle) ${p50(idle).toFixed(2)} ms; ratio ${ratio.toFixed(2)}x; ` +
        `A's answers ${JSON.stringify(Object.fromEntries(answers))}\n`,
    );
    expect(ratio).toBeLessThanOrEqual(2);
  }, 180_000);
});
