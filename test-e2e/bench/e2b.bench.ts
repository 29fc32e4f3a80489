/**
 * Benchmark of issue 28: `commands.run('true')` through the official JS e2b SDK (npm e2b, the
 * gateway's E2B API: a Connect server stream over an agent background process) vs the TypeScript
 * SDK's exec of `true` (REST, the agent's persistent shell), on the same session, in the same run.
 * Goal: e2b p50 <= 1.2x exec p50.
 *
 * Also measured, to show where the time goes: the same agent work as an E2B command started
 * through our own REST API (start a background process running `bash -l -c true`, wait for it,
 * remove it: three calls, no Connect), so the e2b mode's cost splits into the agent's
 * process spawn and the E2B layer on top of it; and the floor of E2B's command semantics (every
 * command its own process, with a pid, signals and an exit status of its own): exec of
 * `/bin/bash --noprofile --norc -c true`, one round trip that makes one new process, where exec
 * of `true` makes none (a builtin of the running shell). Under gVisor a new process is most of a
 * command's cost, so `e2b / floor` says how close the E2B layer is to what its semantics allow.
 *
 * Modes are interleaved: each round runs a slice of every mode (rotating which goes first), so load
 * drift on the shared machine hits them alike; the 1-minute load average is printed before and
 * after. Needs `make platform-up` (platform.env: E2E_GATEWAY_URL, E2E_GATEWAY_API_KEY).
 *   --samples N   samples per mode (default 300)   --rounds R   slices (default 10)
 */
import * as os from 'node:os';
import { parseArgs } from 'node:util';

// The SDK's ESM build (its CommonJS main require()s the ESM-only chalk).
import { Sandbox } from 'e2b/dist/index.mjs';

import { SandboxClient } from '../../sdk/typescript/src/index.js';

const { values } = parseArgs({
  options: { samples: { type: 'string', default: '300' }, rounds: { type: 'string', default: '10' } },
});
const SAMPLES = Number(values.samples);
const ROUNDS = Number(values.rounds);
const WARMUP = 20;

const url = process.env.E2E_GATEWAY_URL;
const apiKey = process.env.E2E_GATEWAY_API_KEY;
if (!url || !apiKey)
  throw new Error('bench-e2b needs E2E_GATEWAY_URL and E2E_GATEWAY_API_KEY (make platform-up)');

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!;
}

function summary(name: string, ms: number[]): { name: string; p50: number; line: string } {
  const s = [...ms].sort((a, b) => a - b);
  const mean = s.reduce((a, b) => a + b, 0) / s.length;
  const p50 = pct(s, 50);
  const line = `${name.padEnd(44)} n=${s.length}  p50 ${p50.toFixed(2)} ms  p90 ${pct(s, 90).toFixed(2)}  p99 ${pct(s, 99).toFixed(2)}  mean ${mean.toFixed(2)}`;
  return { name, p50, line };
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await fn();
  return performance.now() - t;
}

async function main(): Promise<void> {
  const load = (): string => os.loadavg()[0]!.toFixed(2);
  console.log(
    `bench-e2b: ${SAMPLES} samples per mode in ${ROUNDS} interleaved rounds; load ${load()} (1 min), ${os.cpus().length} CPUs`,
  );
  const e2bOpts = { apiKey, apiUrl: `${url}/e2b`, sandboxUrl: `${url}/e2b/envd`, requestTimeoutMs: 120_000 };
  const sbx = await Sandbox.create({ ...e2bOpts, timeoutMs: 1_800_000 });
  const [name, namespace] = sbx.sandboxId.split('.') as [string, string];
  const rest = new SandboxClient({ baseUrl: url!, apiKey: apiKey!, namespace, retry: { retries: 0 } });
  const modes: Array<[string, () => Promise<unknown>]> = [
    ["e2b SDK commands.run('true')", () => sbx.commands.run('true')],
    ["TS SDK exec 'true'", () => rest.exec(name, { command: 'true' })],
    [
      "floor: TS SDK exec 'bash -c true' (1 new process)",
      () => rest.exec(name, { command: '/bin/bash --noprofile --norc -c true' }),
    ],
    [
      'TS SDK process bash -l -c true (start+wait+rm)',
      async () => {
        const p = await rest.startProcess(name, { command: "exec /bin/bash -l -c 'true'" });
        await rest.waitProcess(name, p.id, 30);
        await rest.removeProcess(name, p.id);
      },
    ],
  ];
  const samples = new Map<string, number[]>(modes.map(([n]) => [n, []]));
  try {
    for (const [, fn] of modes) for (let i = 0; i < WARMUP; i++) await fn();
    const perRound = Math.ceil(SAMPLES / ROUNDS);
    // Round r runs the modes starting at mode r (mod the number of modes).
    const order = Array.from(
      { length: ROUNDS * modes.length },
      (_, k) => modes[(k + Math.floor(k / modes.length)) % modes.length]!,
    );
    for (const [n, fn] of order) {
      for (let i = 0; i < perRound; i++) samples.get(n)!.push(await timed(fn));
    }
  } finally {
    await sbx.kill();
  }
  const results = modes.map(([n]) => summary(n, samples.get(n)!));
  for (const r of results) console.log(r.line);
  const [e2b, exec, floor, proc] = results as [
    (typeof results)[0],
    (typeof results)[0],
    (typeof results)[0],
    (typeof results)[0],
  ];
  console.log(`ratio e2b / exec at p50: ${(e2b.p50 / exec.p50).toFixed(2)}x (goal <= 1.2x)`);
  console.log(
    `ratio e2b / floor at p50: ${(e2b.p50 / floor.p50).toFixed(2)}x (the floor: one new process per command, as E2B's semantics need; floor / exec ${(floor.p50 / exec.p50).toFixed(2)}x)`,
  );
  console.log(
    `ratio e2b / REST process at p50: ${(e2b.p50 / proc.p50).toFixed(2)}x (the E2B layer over the same agent work)`,
  );
  console.log(`load ${load()} (1 min) at the end`);
}

await main();
