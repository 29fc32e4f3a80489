/**
 * Benchmark of issue 12 on the local cluster, through the in-cluster gateway: tenant B's exec of
 * `true` (its own session on the real agent) with tenant A quiet, and the same while tenant A's
 * workers keep its session, which runs the hostile-agent image, busy with the attacks of
 * api-gateway/bench/attack.ts (answers in 1-byte chunks, nested JSON, endless answers and
 * streams, ...). The two modes are measured interleaved (api-gateway/bench/stats.ts), the attack
 * started before and stopped after each attacked slice, so load drift hits both alike; samples are
 * sequential and paced under the key's rate limit (no requests/second phase: concurrent callers
 * would measure the rate limit, not the attack). The
 * attacking client is its own process at nice 19 (this bundle, `--serve attacker`): in a
 * deployment it is a remote client, not a neighbour of the gateway on its cores. Goal: tenant B's
 * p50 under attack <= 2x quiet. Also prints the gateway process's peak RSS over the run (VmHWM from
 * /proc on the node; needs root) and the statuses tenant A got. Not a test: figures only.
 *
 * Needs `make platform-up` (platform.env: E2E_GATEWAY_URL, E2E_GATEWAY_API_KEY for tenant A,
 * E2E_OTHER_API_KEY for tenant B).
 *   --iterations N      sequential samples per mode (default 300)
 *   --warmup N          unmeasured calls per mode first (default 20)
 *   --rounds N          interleaved slices (default 6)
 *   --attack-workers N  tenant A's concurrent attack requests (default 4)
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';

import { execTrueCall, hostPort } from '../../api-gateway/bench/agent-call.js';
import { serveAttacker, spawnAttacker } from '../../api-gateway/bench/attack.js';
import { quantile } from '../../api-gateway/bench/stats.js';
import { kubeClients } from '../src/framework/index.js';
import { predicate, waitFor } from '@sandbox-platform/test-support';
import { AGENT_IMAGE, namespaceOf, uniqueName } from '../specs/isolation/support.js';
import { GatewayProcess, MIB } from '../specs/hostile/gateway-process.js';
import { createHostileSession } from '../specs/hostile/hostile-session.js';

const { values } = parseArgs({
  options: {
    iterations: { type: 'string', default: '300' },
    warmup: { type: 'string', default: '20' },
    rounds: { type: 'string', default: '6' },
    'attack-workers': { type: 'string', default: '4' },
    // The attacker child process (spawnAttacker runs this bundle again with these).
    serve: { type: 'string' },
    'gateway-url': { type: 'string' },
    session: { type: 'string' },
    workers: { type: 'string' },
  },
});

const QUIET = 'tenant B, tenant A quiet';
const ATTACKED = 'tenant B, tenant A attacking';
/** Pause after each attacked slice, so answers the gateway already cut do not spill over. */
const ATTACK_SETTLE_MS = 1000;
/**
 * Untimed pause after each sample: the gateway allows a key 100 requests a second per replica
 * (gateway.limits.perKey), and back-to-back execs of `true` would exceed it; 12 ms keeps tenant B
 * under it on one replica.
 */
const PACE_MS = 12;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Times one call, then waits PACE_MS (untimed). */
async function paced(call: () => Promise<void>): Promise<number> {
  const t0 = process.hrtime.bigint();
  await call();
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  await sleep(PACE_MS);
  return ms;
}

/** One mode's slice: its hook before, n paced samples, its hook after (also on failure). */
async function slice(
  m: { call: () => Promise<void>; before?: () => Promise<void>; after?: () => Promise<void> },
  n: number,
): Promise<number[]> {
  await m.before?.();
  try {
    const out: number[] = [];
    for (let i = 0; i < n; i++) out.push(await paced(m.call));
    return out;
  } finally {
    await m.after?.();
  }
}

interface Summary {
  p50: number;
  p99: number;
}

function summary(mode: string, samples: number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  const p50 = quantile(sorted, 0.5);
  const p99 = quantile(sorted, 0.99);
  const mean = sorted.reduce((x, y) => x + y, 0) / sorted.length;
  console.log(
    `  ${mode.padEnd(32)} n=${String(sorted.length).padEnd(5)} p50 ${p50.toFixed(2)} ms  p99 ${p99.toFixed(2)} ms  mean ${mean.toFixed(2)} ms`,
  );
  return { p50, p99 };
}

function env(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`needs ${name} (make platform-up writes it to .localkube/platform/platform.env)`);
  return v;
}

async function session(url: string, key: string, ns: string, name: string, image: string): Promise<void> {
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const res = await fetch(`${url}/v1/sessions?namespace=${ns}`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ name, image, idleTimeoutSeconds: 900 }),
  });
  if (res.status !== 201) throw new Error(`create ${name}: ${res.status} ${await res.text()}`);
  await ready(url, key, ns, name);
}

async function ready(url: string, key: string, ns: string, name: string): Promise<void> {
  const headers = { authorization: `Bearer ${key}` };
  await waitFor(
    async () =>
      (await (await fetch(`${url}/v1/sessions/${name}?namespace=${ns}`, { headers })).json()) as {
        ready?: boolean;
      },
    predicate(`session ${name} Ready`, (s: { ready?: boolean }) => s.ready === true),
    { timeoutMs: 180_000, intervalMs: 1000 },
  );
}

async function remove(url: string, key: string, ns: string, name: string): Promise<void> {
  const res = await fetch(`${url}/v1/sessions/${name}?namespace=${ns}`, {
    method: 'DELETE',
    headers: { authorization: `Bearer ${key}` },
  });
  await res.body?.cancel();
}

async function main(): Promise<void> {
  const url = env('E2E_GATEWAY_URL');
  const keyA = env('E2E_GATEWAY_API_KEY');
  const keyB = env('E2E_OTHER_API_KEY');
  const nsA = namespaceOf('e2e');
  const nsB = namespaceOf('other');
  const evil = uniqueName('bench-hostile');
  const good = uniqueName('bench-quiet');
  const load = loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
  console.log(
    `hostile-tenant bench (in-cluster gateway ${url}), ${JSON.stringify(values)}, load average ${load}`,
  );
  console.log(`creating tenant A's hostile session ${evil} and tenant B's session ${good}...`);
  await createHostileSession(kubeClients(), nsA, evil, 'e2e');
  await Promise.all([ready(url, keyA, nsA, evil), session(url, keyB, nsB, good, AGENT_IMAGE)]);
  let gateways: GatewayProcess[] = [];
  try {
    gateways = await GatewayProcess.findAll(
      kubeClients().core,
      process.env.E2E_PLATFORM_NAMESPACE ?? 'sandbox-system',
      process.env.E2E_PLATFORM_RELEASE ?? 'sandbox',
    );
    for (const g of gateways) g.resetPeak();
  } catch (err) {
    console.log(`(no gateway RSS figures: ${(err as Error).message})`);
    gateways = [];
  }
  const attacker = await spawnAttacker({
    gatewayUrl: url,
    apiKey: keyA,
    session: evil,
    workers: Number(values['attack-workers']),
  });
  const counts: Record<string, number> = {};
  const path = `/v1/sessions/${good}/exec?namespace=${nsB}`;
  const quiet = execTrueCall({ ...hostPort(url), path, token: keyB });
  const attacked = execTrueCall({ ...hostPort(url), path, token: keyB });
  const iterations = Number(values.iterations);
  const rounds = Math.max(1, Number(values.rounds));
  const modes: Array<{
    mode: string;
    call: () => Promise<void>;
    before?: () => Promise<void>;
    after?: () => Promise<void>;
  }> = [
    { mode: QUIET, call: quiet.call },
    {
      mode: ATTACKED,
      call: attacked.call,
      before: () => attacker.start(),
      after: async () => {
        for (const [k, v] of Object.entries(await attacker.stop())) counts[k] = (counts[k] ?? 0) + v;
        await sleep(ATTACK_SETTLE_MS);
      },
    },
  ];
  const samples = modes.map(() => [] as number[]);
  try {
    for (const m of modes) for (let i = 0; i < Number(values.warmup); i++) await paced(m.call);
    console.log(`measuring ${rounds} interleaved rounds, ${iterations} samples per mode in all...`);
    for (let r = 0; r < rounds; r++) {
      for (const k of modes.map((_m, i) => (i + r) % modes.length)) {
        const n = Math.floor(((r + 1) * iterations) / rounds) - Math.floor((r * iterations) / rounds);
        samples[k]!.push(...(await slice(modes[k]!, n)));
      }
      console.log(`  round ${r + 1}/${rounds} done`);
    }
    const rows = modes.map((m, k) => summary(m.mode, samples[k]!));
    const [q, a] = rows as [Summary, Summary];
    console.log(
      `tenant B under attack / quiet (goal <= 2): p50 ${(a.p50 / q.p50).toFixed(2)}x, p99 ${(a.p99 / q.p99).toFixed(2)}x`,
    );
    console.log(`tenant A's attack answers (status: count): ${JSON.stringify(counts)}`);
    for (const g of gateways) {
      const m = g.memory();
      console.log(
        `gateway ${g.podName}: peak RSS ${(m.hwm / MIB).toFixed(1)} MiB over the run, now ${(m.rss / MIB).toFixed(1)} MiB` +
          (g.memoryLimit ? ` (limit ${(g.memoryLimit / MIB).toFixed(0)} MiB)` : ''),
      );
    }
  } finally {
    quiet.close();
    attacked.close();
    await attacker.close();
    await remove(url, keyA, nsA, evil);
    await remove(url, keyB, nsB, good);
  }
}

if (values.serve === 'attacker') {
  await serveAttacker({
    gatewayUrl: values['gateway-url']!,
    apiKey: process.env.BENCH_ATTACK_KEY!,
    session: values.session!,
    workers: Number(values.workers),
  });
} else {
  await main();
}
