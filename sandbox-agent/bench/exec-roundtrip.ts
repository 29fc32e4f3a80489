/**
 * Benchmark: round trip of `true` through the agent over HTTP keep-alive, side by side with
 * spawning `bash -c true` through child_process (the floor an agent-less design pays per command).
 * Both run in the same process, interleaved call by call so load changes hit both alike; the
 * agent runs in its own process (as in a pod), started from this same file with `--agent`.
 *
 *   make bench-agent            (or: npm run bench -w sandbox-agent -- --iterations 1000)
 *
 * Figures taken on a loaded machine are noisy; the load average is printed with them.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';

import { startAgent } from '../src/agent.js';
import { agentConfig } from '../src/config.js';

const WARMUP = 50;
const GOAL_RATIO = 2;

interface Options {
  iterations: number;
}

function parseArgs(argv: string[]): Options {
  const at = argv.indexOf('--iterations');
  const iterations = at >= 0 ? Number(argv[at + 1]) : 1000;
  if (!Number.isInteger(iterations) || iterations < 1)
    throw new Error('--iterations must be a positive integer');
  return { iterations };
}

/** Child mode: run an agent and print its port. */
async function runAgentProcess(): Promise<void> {
  const config = agentConfig({
    token: process.env.BENCH_TOKEN ?? '',
    workspace: process.env.BENCH_WORKSPACE ?? '',
    port: 0,
    host: '127.0.0.1',
    logLevel: 'warn',
  });
  const agent = await startAgent(config);
  process.stdout.write(`${JSON.stringify({ port: agent.port })}\n`);
  process.on('SIGTERM', () => void agent.close(0).then(() => process.exit(0)));
}

interface AgentClient {
  exec(): Promise<void>;
}

function agentClient(port: number, token: string): AgentClient {
  const httpAgent = new Agent({ keepAlive: true, maxSockets: 1 });
  const body = JSON.stringify({ command: 'true' });
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  return {
    exec: () =>
      new Promise((resolve, reject) => {
        const req = request(
          { host: '127.0.0.1', port, method: 'POST', path: '/v1/exec', headers, agent: httpAgent },
          (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (c: string) => (text += c));
            res.on('end', () => {
              const exitCode = (JSON.parse(text) as { exitCode?: number }).exitCode;
              if (res.statusCode === 200 && exitCode === 0) resolve();
              else reject(new Error(`agent answered ${res.statusCode}: ${text}`));
            });
          },
        );
        req.on('error', reject);
        req.end(body);
      }),
  };
}

async function spawnTrue(): Promise<void> {
  const child = spawn('bash', ['-c', 'true'], { stdio: 'ignore' });
  const [code] = (await once(child, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`bash -c true exited ${code}`);
}

async function timed(fn: () => Promise<void>): Promise<number> {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

interface Stats {
  p50: number;
  p90: number;
  p99: number;
  mean: number;
  min: number;
  max: number;
}

/** Nearest-rank percentiles. */
function stats(samples: number[]): Stats {
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = (q: number): number => sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)] ?? NaN;
  const mean = sorted.reduce((s, x) => s + x, 0) / sorted.length;
  return {
    p50: rank(0.5),
    p90: rank(0.9),
    p99: rank(0.99),
    mean,
    min: sorted[0] ?? NaN,
    max: sorted.at(-1) ?? NaN,
  };
}

function row(name: string, s: Stats): string {
  const cells = [s.p50, s.p90, s.p99, s.mean, s.min, s.max].map((v) => v.toFixed(3).padStart(8));
  return `${name.padEnd(30)}${cells.join('')}`;
}

async function startAgentProcess(
  token: string,
  workspace: string,
): Promise<{ port: number; stop: () => Promise<void> }> {
  const child = spawn(process.execPath, [process.argv[1] ?? '', '--agent'], {
    env: { ...process.env, BENCH_TOKEN: token, BENCH_WORKSPACE: workspace },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout });
  for await (const line of lines) {
    const port = (JSON.parse(line) as { port?: number }).port;
    if (port !== undefined) {
      return {
        port,
        stop: async () => {
          child.kill('SIGTERM');
          await once(child, 'exit');
        },
      };
    }
  }
  throw new Error('the agent process ended before it listened');
}

async function main(): Promise<void> {
  const { iterations } = parseArgs(process.argv.slice(2));
  const token = randomBytes(32).toString('hex');
  const workspace = await mkdtemp(join(tmpdir(), 'sbx-bench-'));
  const agentProcess = await startAgentProcess(token, workspace);
  try {
    const client = agentClient(agentProcess.port, token);
    for (let i = 0; i < WARMUP; i++) {
      await client.exec();
      await spawnTrue();
    }
    const agentMs: number[] = [];
    const spawnMs: number[] = [];
    const loadBefore = loadavg()[0] ?? NaN;
    for (let i = 0; i < iterations; i++) {
      agentMs.push(await timed(() => client.exec()));
      spawnMs.push(await timed(spawnTrue));
    }
    const loadAfter = loadavg()[0] ?? NaN;
    const a = stats(agentMs);
    const s = stats(spawnMs);
    const ratio = a.p50 / s.p50;
    const lines = [
      `exec round trip of \`true\`: ${iterations} calls each, interleaved, after ${WARMUP} warm-up calls each`,
      `node ${process.version}, ${availableParallelism()} CPUs, 1-min load average ${loadBefore.toFixed(2)} before / ${loadAfter.toFixed(2)} after`,
      '',
      `${'(milliseconds)'.padEnd(30)}${['p50', 'p90', 'p99', 'mean', 'min', 'max'].map((h) => h.padStart(8)).join('')}`,
      row('agent, HTTP keep-alive', a),
      row('spawn bash -c true (floor)', s),
      '',
      `agent p50 / spawn p50 = ${ratio.toFixed(3)}  (goal <= ${GOAL_RATIO}: ${ratio <= GOAL_RATIO ? 'met' : 'NOT met'})`,
      `agent p99 / spawn p99 = ${(a.p99 / s.p99).toFixed(3)}`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await agentProcess.stop();
    await rm(workspace, { recursive: true, force: true });
  }
}

if (process.argv.includes('--agent')) await runAgentProcess();
else await main();
