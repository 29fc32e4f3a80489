// make bench-code (issue 29, ADR 0033): the code interpreter through the in-cluster gateway, side by
// side with the gateway's exec in the same run, on the local platform (make platform-up).
//
//   warm:  run_code("1+1") on a warm kernel vs exec `true`, interleaved one by one on one session
//          (p50/p99 of each, and the ratio of the p50s; goal: code p50 <= 2x exec p50)
//   first: the first run_code("1+1") of a new session (its kernel starts), on fresh sessions of the
//          sandbox-python image, the session made Ready before (an exec) so only the kernel start
//          and the run are timed (goal: p50 <= 1.5 s); and, for comparison, a new context in a warm
//          session (a second kernel in a running Pod)
//
// Figures only, never asserted. Flags: --iterations N (warm pairs, default 200), --sessions N (fresh
// sessions, default 5), --contexts N (new contexts, default 5). Needs E2E_GATEWAY_URL and
// E2E_GATEWAY_API_KEY (.localkube/platform/platform.env); E2E_PYTHON_IMAGE names the image.
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';

const { values: args } = parseArgs({
  options: {
    iterations: { type: 'string', default: '200' },
    sessions: { type: 'string', default: '5' },
    contexts: { type: 'string', default: '5' },
  },
});
const BASE = required('E2E_GATEWAY_URL');
const KEY = required('E2E_GATEWAY_API_KEY');
const IMAGE = process.env.E2E_PYTHON_IMAGE ?? 'localhost/sandbox-platform/sandbox-python:dev';
/** Pause between calls: under the gateway's per-key rate limit (its 429s would be timed too). */
const PACE_MS = 25;

function required(name) {
  const v = process.env[name];
  if (!v) throw new Error(`bench-code needs ${name} (source .localkube/platform/platform.env)`);
  return v;
}

async function call(method, path, body) {
  for (let attempt = 0; ; attempt++) {
    let res;
    try {
      res = await fetch(new URL(path, BASE), {
        method,
        headers: { authorization: `Bearer ${KEY}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
    } catch (err) {
      // A replica going away under a redeploy; only calls that are safe to send again (not a run).
      if (attempt >= 30 || path.endsWith('/code')) throw err;
      retries++;
      await sleep(1000);
      continue;
    }
    const text = await res.text();
    // Refused before any work (rate limit; a gateway replica replaced by a redeploy): again later.
    if ((res.status === 429 || res.status === 503) && attempt < 30) {
      retries++;
      await sleep(1000 * Number(res.headers.get('retry-after') ?? 1));
      continue;
    }
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
    return text ? JSON.parse(text) : undefined;
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
/** Calls answered 429 or 503 and sent again (printed: a timed call that was retried is slower). */
let retries = 0;

async function timed(fn) {
  const t = performance.now();
  const value = await fn();
  return { ms: performance.now() - t, value };
}

function stats(samples) {
  const s = [...samples].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
  return { n: s.length, p50: q(0.5), p99: q(0.99), min: s[0], max: s[s.length - 1] };
}

const fmt = (st) =>
  `n=${st.n} p50 ${st.p50.toFixed(2)} ms  p99 ${st.p99.toFixed(2)} ms  min ${st.min.toFixed(2)}  max ${st.max.toFixed(2)}`;

async function newSession(prefix) {
  const name = `${prefix}-${randomBytes(3).toString('hex')}`;
  await call('POST', '/v1/sessions', { name, image: IMAGE });
  await call('POST', `/v1/sessions/${name}/exec`, { command: 'true', waitSeconds: 120 });
  return name;
}

const runCode = (name, code, context) =>
  call('POST', `/v1/sessions/${name}/code`, { code, ...(context ? { context } : {}) });

async function main() {
  const load = () =>
    loadavg()
      .map((l) => l.toFixed(2))
      .join(' ');
  console.log(`bench-code: ${new Date().toISOString()}  load ${load()}  image ${IMAGE}`);
  const sessions = [];
  try {
    // Fresh sessions: the first run of each starts its kernel.
    const first = [];
    for (let i = 0; i < Number(args.sessions); i++) {
      const name = await newSession('bench-code-first');
      sessions.push(name);
      const { ms, value } = await timed(() => runCode(name, '1+1'));
      if (value.outputs?.[0]?.data?.['text/plain'] !== '2')
        throw new Error(`unexpected run: ${JSON.stringify(value)}`);
      first.push(ms);
    }
    const warmSession = sessions[0] ?? (await newSession('bench-code-warm'));
    if (!sessions.includes(warmSession)) sessions.push(warmSession);
    // New contexts in the warm session: a second kernel in a running Pod.
    const contexts = [];
    for (let i = 0; i < Number(args.contexts); i++) {
      const context = `bench-${i}`;
      const { ms } = await timed(() => runCode(warmSession, '1+1', context));
      contexts.push(ms);
      await call('DELETE', `/v1/sessions/${warmSession}/code/contexts/${context}`);
    }
    // Warm: interleaved pairs on the same session, after a few unmeasured rounds.
    for (let i = 0; i < 10; i++) {
      await runCode(warmSession, '1+1');
      await call('POST', `/v1/sessions/${warmSession}/exec`, { command: 'true' });
    }
    const code = [];
    const exec = [];
    for (let i = 0; i < Number(args.iterations); i++) {
      exec.push(
        (await timed(() => call('POST', `/v1/sessions/${warmSession}/exec`, { command: 'true' }))).ms,
      );
      await sleep(PACE_MS);
      code.push((await timed(() => runCode(warmSession, '1+1'))).ms);
      await sleep(PACE_MS);
    }
    const c = stats(code);
    const e = stats(exec);
    const f = stats(first);
    const x = stats(contexts);
    console.log(`exec true (gateway)          ${fmt(e)}`);
    console.log(`run_code 1+1 (warm kernel)   ${fmt(c)}`);
    console.log(`  ratio of p50s: ${(c.p50 / e.p50).toFixed(2)}x (goal <= 2x)`);
    console.log(`first run_code, new session  ${fmt(f)}  (goal p50 <= 1500 ms)`);
    console.log(`first run_code, new context  ${fmt(x)}`);
    console.log(`load at the end ${load()}; calls retried after 429/503: ${retries}`);
  } finally {
    for (const name of sessions) await call('DELETE', `/v1/sessions/${name}`).catch(() => undefined);
  }
}

await main();
