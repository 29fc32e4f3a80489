/**
 * Host-level timing of the E2B command path (issue 28, `make bench-e2b`'s question without a
 * cluster): `commands.run('true')` through the official JS e2b SDK vs our TS SDK's exec of `true`
 * and of `/bin/bash --noprofile --norc -c true` (the floor: one round trip that makes one new
 * process) and `commands.list()` (one envd call, no process), on one session of the gateway with a
 * real sandbox agent (test/unit/e2b/helpers/e2b-app.ts plays the operator). Not run by `make
 * bench` (it needs no cluster, and says nothing about gVisor); figures in docs/benchmarks.md.
 *
 *   node bench/e2b-local.run.mjs [--samples N] [--isolated] [--agent-process]
 *
 * --isolated: each mode in its own loop (default: the modes in turn, as make bench-e2b);
 * --agent-process: the agent in a process of its own, as in a Pod (default: in the bench's process,
 * whose memory every process spawn of the agent then forks too).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadavg } from 'node:os';

import { deriveToken, type SandboxSession } from '@sandbox-platform/api';
import { build } from 'esbuild';

import { Sandbox } from 'e2b';

import { SandboxClient } from '../../sdk/typescript/src/index.js';
import { KEYS } from '../test/helpers/app.js';
import { ready } from '../test/helpers/sessions.js';
import { MASTER_KEY, startE2bApp } from '../test/unit/e2b/helpers/e2b-app.js';

const { values } = parseArgs({
  options: {
    samples: { type: 'string', default: '200' },
    isolated: { type: 'boolean', default: false },
    // The agent in a process of its own (as in a Pod), not in the bench's: a spawn forks the
    // agent's memory, and the bench's process also holds the gateway and the SDK.
    'agent-process': { type: 'boolean', default: false },
  },
});
const samples = Number(values.samples);

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!;
}

type Mode = [string, () => Promise<unknown>];

/**
 * Milliseconds per call of each mode. Interleaved by default (as make bench-e2b); --isolated:
 * each mode in its own loop (no mode's trailing work, such as the removal after an E2B command's
 * end, lands on another's).
 */
async function sample(modes: Mode[]): Promise<Map<string, number[]>> {
  const times = new Map<string, number[]>(modes.map(([n]) => [n, []]));
  const time = async (n: string, f: () => Promise<unknown>): Promise<void> => {
    const t = performance.now();
    await f();
    times.get(n)!.push(performance.now() - t);
  };
  const order = values.isolated
    ? modes.flatMap((m) => Array.from({ length: samples }, () => m))
    : Array.from({ length: samples }, () => modes).flat();
  for (const [n, f] of order) await time(n, f);
  return times;
}

const e = await startE2bApp();
const children: ChildProcess[] = [];
if (values['agent-process']) {
  const entry = join(import.meta.dirname, 'sandbox-agent.mjs');
  await build({
    entryPoints: [join(process.cwd(), '../sandbox-agent/src/main.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile: entry,
    logLevel: 'warning',
    alias: { '@sandbox-platform/api': join(process.cwd(), '../crds/src/index.ts') },
    banner: {
      js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
    },
  });
  // The store plays the operator with this agent instead of an in-process one.
  const store = e.store as unknown as {
    port: number;
    nextHost: number;
    startFor(s: SandboxSession): Promise<void>;
    put(s: SandboxSession): void;
    sessions: Map<string, SandboxSession>;
  };
  store.startFor = async (s: SandboxSession): Promise<void> => {
    const ip = `127.0.0.${store.nextHost++}`;
    const token = deriveToken(MASTER_KEY, {
      namespace: s.metadata.namespace!,
      name: s.metadata.name!,
      uid: s.metadata.uid!,
    });
    const tokenFile = join(e.workspace, `.token-${ip}`);
    await writeFile(tokenFile, token, { mode: 0o600 });
    const child = spawn(process.execPath, [entry], {
      env: {
        PATH: process.env.PATH,
        HOME: e.workspace,
        SANDBOX_TOKEN_FILE: tokenFile,
        SANDBOX_WORKSPACE: e.workspace,
        SANDBOX_AGENT_HOST: ip,
        SANDBOX_AGENT_PORT: String(store.port),
        SANDBOX_AGENT_LOG_LEVEL: 'error',
      },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    children.push(child);
    for (const end = Date.now() + 20_000; ; await new Promise((r) => setTimeout(r, 50))) {
      if (Date.now() > end) throw new Error('the agent did not start');
      const ok = await fetch(`http://${ip}:${store.port}/healthz`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
    }
    const next = structuredClone(store.sessions.get(`${s.metadata.namespace}/${s.metadata.name}`)!);
    ready(ip)(next);
    store.put(next);
  };
}
try {
  const sbx = await Sandbox.create(e.opts(KEYS.a));
  const [name, namespace] = sbx.sandboxId.split('.') as [string, string];
  const rest = new SandboxClient({ baseUrl: e.url, apiKey: KEYS.a, namespace, retry: { retries: 0 } });
  const modes: Mode[] = [
    ["e2b commands.run('true')", () => sbx.commands.run('true')],
    ["exec 'true'", () => rest.exec(name, { command: 'true' })],
    [
      "floor: exec 'bash --noprofile --norc -c true'",
      () => rest.exec(name, { command: '/bin/bash --noprofile --norc -c true' }),
    ],
    // The E2B layer's own cost (SDK, Connect, the envd auth bridge) on one agent call, no process.
    ['e2b commands.list() (one agent call)', () => sbx.commands.list()],
  ];
  for (const [, f] of modes) for (let i = 0; i < 10; i++) await f();
  const load0 = loadavg()[0]!;
  const times = await sample(modes);
  const p50s: number[] = [];
  for (const [n, t] of times) {
    t.sort((a, b) => a - b);
    p50s.push(pct(t, 50));
    console.log(
      `${n.padEnd(50)} p50 ${pct(t, 50).toFixed(2)} ms  p90 ${pct(t, 90).toFixed(2)} ms  p99 ${pct(t, 99).toFixed(2)} ms`,
    );
  }
  console.log(
    `e2b / floor ${(p50s[0]! / p50s[2]!).toFixed(2)}x; e2b / exec ${(p50s[0]! / p50s[1]!).toFixed(2)}x; load ${load0.toFixed(2)}-${loadavg()[0]!.toFixed(2)}`,
  );
  await sbx.kill();
} finally {
  for (const c of children) c.kill('SIGTERM');
  await e.close();
}
