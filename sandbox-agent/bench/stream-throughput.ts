/**
 * Benchmark: stream throughput of `cat` of a 100 MiB file through the agent
 * (POST /v1/exec/stream, NDJSON parsed and decoded by the client), side by side with a baseline
 * that reads the same file directly: node's fs read stream piped into a loopback TCP socket,
 * counted by the same kind of client. Both servers run in one child process (as the agent does in
 * a pod); the client runs here. Rounds alternate agent and baseline so load changes hit both alike.
 *
 *   make bench-agent            (or: node sandbox-agent/bench/run.mjs stream-throughput --rounds 3)
 *
 * Two files: ASCII text (sent as UTF-8 JSON strings) and random bytes (sent as base64). The
 * agent's output cap is raised to hold the whole file (by default it keeps 1 MiB per stream).
 * MB = 10^6 bytes. Figures taken on a loaded machine are noisy; the load average is printed.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { connect, createServer } from 'node:net';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';

import { startAgent } from '../src/agent.js';
import { agentConfig } from '../src/config.js';

const MIB = 1024 * 1024;
const FILE_BYTES = 100 * MIB;
const GOAL_RATIO = 0.8;

function parseArgs(argv: string[]): { rounds: number } {
  const at = argv.indexOf('--rounds');
  const rounds = at >= 0 ? Number(argv[at + 1]) : 3;
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error('--rounds must be a positive integer');
  return { rounds };
}

/** Child mode: the agent and the baseline file server; prints their ports. */
async function runServers(): Promise<void> {
  const workspace = process.env.BENCH_WORKSPACE ?? '';
  const agent = await startAgent(
    agentConfig({
      token: process.env.BENCH_TOKEN ?? '',
      workspace,
      port: 0,
      host: '127.0.0.1',
      logLevel: 'warn',
      outputCapBytes: FILE_BYTES + MIB,
    }),
  );
  const baseline = createServer((socket) => {
    socket.once('data', (name: Buffer) => {
      const file = createReadStream(join(workspace, name.toString().trim()));
      file.pipe(socket);
      file.on('error', () => socket.destroy());
    });
  });
  baseline.listen(0, '127.0.0.1');
  await once(baseline, 'listening');
  const address = baseline.address();
  const baselinePort = typeof address === 'object' && address ? address.port : 0;
  process.stdout.write(`${JSON.stringify({ port: agent.port, baselinePort })}\n`);
  process.on('SIGTERM', () => {
    baseline.close();
    void agent.close(0).then(() => process.exit(0));
  });
}

/**
 * Streams `cat name` through the agent and reads the answer's bytes without parsing them (the
 * agent's own cost, without the client's); resolves with the file size once the answer ends with
 * an exit line of status 0.
 */
function throughAgentUnparsed(port: number, token: string, name: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/v1/exec/stream',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      },
      (res) => {
        let tail = '';
        res.on(
          'data',
          (chunk: Buffer) =>
            (tail = (tail + chunk.toString('latin1', Math.max(0, chunk.length - 256))).slice(-256)),
        );
        res.on('end', () => {
          if (res.statusCode === 200 && tail.includes('"type":"exit","exitCode":0,')) resolve(FILE_BYTES);
          else reject(new Error(`agent answered ${res.statusCode}, ending ${tail}`));
        });
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify({ command: `cat ${name}`, timeoutSeconds: 300 }));
  });
}

/** Streams `cat name` through the agent; resolves with the decoded bytes counted. */
function throughAgent(port: number, token: string, name: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/v1/exec/stream',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      },
      (res) => {
        let bytes = 0;
        let exit: { exitCode?: number; truncated?: boolean } | undefined;
        const lines = createInterface({ input: res, crlfDelay: Infinity });
        lines.on('line', (line) => {
          const event = JSON.parse(line) as { type: string; data?: string; encoding?: string };
          if (event.type === 'stdout' && event.data !== undefined) {
            bytes += Buffer.from(event.data, event.encoding === 'base64' ? 'base64' : 'utf8').length;
          } else if (event.type === 'exit') exit = event as typeof exit;
        });
        lines.on('close', () => {
          if (res.statusCode === 200 && exit?.exitCode === 0 && exit.truncated === false) resolve(bytes);
          else reject(new Error(`agent answered ${res.statusCode}, exit ${JSON.stringify(exit)}`));
        });
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify({ command: `cat ${name}`, timeoutSeconds: 300 }));
  });
}

/** Reads the file from the baseline server; resolves with the bytes counted. */
function direct(port: number, name: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(`${name}\n`));
    let bytes = 0;
    socket.on('data', (chunk: Buffer) => (bytes += chunk.length));
    socket.on('end', () => resolve(bytes));
    socket.on('error', reject);
  });
}

async function megabytesPerSecond(run: () => Promise<number>): Promise<number> {
  const start = performance.now();
  const bytes = await run();
  const seconds = (performance.now() - start) / 1000;
  if (bytes !== FILE_BYTES) throw new Error(`got ${bytes} bytes, expected ${FILE_BYTES}`);
  return bytes / 1e6 / seconds;
}

async function writeFile(path: string, text: boolean): Promise<void> {
  const out = createWriteStream(path);
  const line = Buffer.from(`${'the quick brown fox jumps over the lazy dog 0123456789 '.repeat(3)}\n`);
  for (let written = 0; written < FILE_BYTES;) {
    const size = Math.min(MIB, FILE_BYTES - written);
    const chunk = text ? Buffer.alloc(size, line) : randomBytes(size);
    if (!out.write(chunk)) await once(out, 'drain');
    written += size;
  }
  out.end();
  await once(out, 'finish');
}

async function startServers(
  token: string,
  workspace: string,
): Promise<{ port: number; baselinePort: number; stop: () => Promise<void> }> {
  // BENCH_CPU_PROF=<dir>: write a CPU profile of the server process there (to see where time goes).
  const profile = process.env.BENCH_CPU_PROF
    ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`]
    : [];
  const child = spawn(process.execPath, [...profile, process.argv[1] ?? '', '--serve'], {
    env: { ...process.env, BENCH_TOKEN: token, BENCH_WORKSPACE: workspace },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  for await (const line of createInterface({ input: child.stdout })) {
    const ports = JSON.parse(line) as { port?: number; baselinePort?: number };
    if (ports.port !== undefined && ports.baselinePort !== undefined) {
      return {
        port: ports.port,
        baselinePort: ports.baselinePort,
        stop: async () => {
          child.kill('SIGTERM');
          await once(child, 'exit');
        },
      };
    }
  }
  throw new Error('the server process ended before it listened');
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] ?? NaN) : ((sorted[mid - 1] ?? NaN) + (sorted[mid] ?? NaN)) / 2;
}

async function main(): Promise<void> {
  const { rounds } = parseArgs(process.argv.slice(2));
  const token = randomBytes(32).toString('hex');
  const workspace = await mkdtemp(join(tmpdir(), 'sbx-stream-bench-'));
  process.stdout.write(`writing two ${FILE_BYTES / MIB} MiB files in ${workspace}\n`);
  await writeFile(join(workspace, 'text.txt'), true);
  await writeFile(join(workspace, 'random.bin'), false);
  const servers = await startServers(token, workspace);
  const loadBefore = loadavg()[0] ?? NaN;
  const lines: string[] = [];
  try {
    for (const [name, label] of [
      ['text.txt', 'ASCII text (UTF-8 JSON strings)'],
      ['random.bin', 'random bytes (base64)'],
    ] as const) {
      await throughAgent(servers.port, token, name); // warm-up: page cache, JIT
      await throughAgentUnparsed(servers.port, token, name);
      await direct(servers.baselinePort, name);
      const agent: number[] = [];
      const unparsed: number[] = [];
      const baseline: number[] = [];
      for (let round = 0; round < rounds; round++) {
        agent.push(await megabytesPerSecond(() => throughAgent(servers.port, token, name)));
        unparsed.push(await megabytesPerSecond(() => throughAgentUnparsed(servers.port, token, name)));
        baseline.push(await megabytesPerSecond(() => direct(servers.baselinePort, name)));
        process.stdout.write(
          `  ${name} round ${round + 1}: agent ${agent.at(-1)?.toFixed(1)} MB/s, agent unparsed ${unparsed.at(-1)?.toFixed(1)} MB/s, direct ${baseline.at(-1)?.toFixed(1)} MB/s\n`,
        );
      }
      const ratio = median(agent) / median(baseline);
      const rounds_ = (values: number[]): string => values.map((v) => v.toFixed(1)).join(', ');
      lines.push(
        `${label}:`,
        `  agent  /v1/exec/stream, client parses   median ${median(agent).toFixed(1)} MB/s  (rounds: ${rounds_(agent)})`,
        `  agent  /v1/exec/stream, bytes only      median ${median(unparsed).toFixed(1)} MB/s  (rounds: ${rounds_(unparsed)})`,
        `  direct fs -> socket                     median ${median(baseline).toFixed(1)} MB/s  (rounds: ${rounds_(baseline)})`,
        `  agent / direct = ${ratio.toFixed(3)} (parsed), ${(median(unparsed) / median(baseline)).toFixed(3)} (bytes only)  (reference ${GOAL_RATIO}: ${ratio >= GOAL_RATIO ? 'met' : 'NOT met'})`,
      );
    }
  } finally {
    await servers.stop();
    await rm(workspace, { recursive: true, force: true });
  }
  const loadAfter = loadavg()[0] ?? NaN;
  const header = [
    '',
    `stream throughput of cat of a ${FILE_BYTES / MIB} MiB file: ${rounds} rounds each, alternating, after one warm-up each (MB = 10^6 bytes)`,
    `node ${process.version}, ${availableParallelism()} CPUs, 1-min load average ${loadBefore.toFixed(2)} before / ${loadAfter.toFixed(2)} after`,
    '',
  ];
  process.stdout.write(`${[...header, ...lines].join('\n')}\n`);
}

if (process.argv.includes('--serve')) await runServers();
else await main();
