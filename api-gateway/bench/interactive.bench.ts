/**
 * The interactive routes of issue 15, side by side with direct calls in the same run
 * (make bench-gateway-interactive), in a deployment's topology on 127.0.0.1 (no Kubernetes): the
 * agent, the sandbox's port server, the gateway (real code, static session store) and each floor
 * run in their own child process, this process is only the client:
 * - stream throughput (MB/s of the file's bytes) of `cat` of a file (--stream-mib, 100 MiB) through
 *   the gateway's exec stream vs straight to the agent's, and vs the floors of one extra process on
 *   the path: a TCP relay that parses nothing (tcp-pipe.ts), a node:http proxy that pipes the
 *   answer (stream-floors.ts `http`), and that proxy re-serializing every NDJSON event without any
 *   check (`ndjson`: the least any proxy that re-encodes the agent's events does). One streamed exec
 *   carries at most the output cap (GATEWAY_MAX_OUTPUT_BYTES, at most 16 MiB) per stream, so the
 *   file is cat'ed in pieces of --piece-mib, one exec each, one after the other, in every mode;
 *   each mode's answer must have the direct answer's size (same events, same bytes);
 * - port-route throughput: a download (--download-mib) from the sandbox's server through
 *   /v1/sessions/{name}/ports/{port}/ vs straight from that server, and vs the floors of one extra
 *   process in front of that server: the TCP relay, a node:http proxy that pipes the answer with
 *   its length, and that proxy with its upstream side on plain sockets instead of node:http's
 *   client (download-floor.ts);
 * - port-route HTTP p50/p99 of a small GET vs direct, next to the gateway's exec overhead (exec
 *   `true` through the gateway vs direct), the issue's goal being port p50 overhead <= exec's.
 * Transfers rotate the order of the modes each round; latencies are interleaved (stats.ts). The CPU
 * each child process spent per transfer (/proc, 10 ms ticks) is printed next to the rates.
 * Usage: interactive-run.mjs [--iterations 1000] [--warmup 100] [--rounds 5] [--stream-mib 100]
 *        [--piece-mib 16] [--download-mib 100] [--transfers 5] [--parts stream,download,latency]
 *        [--stream-content binary|text] (the streamed file: random bytes, which the agent sends as
 *        base64, or ASCII text lines, sent as JSON-escaped text: a newline escape every ~50 bytes)
 *        [--answer-cpu-ms N] (the per-key CPU share of reading answers; default: the gateway's)
 *        [--cpu-prof DIR] (the gateway and the floors run with node --cpu-prof into DIR, CPU.*.<pid>.*)
 *        [--baseline COMMIT] (also the gateway of COMMIT, in its own process: interactive-baseline.ts)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

import { deriveToken } from '@sandbox-platform/api';

import { agentConfig, startAgent } from '../../sandbox-agent/src/index.js';
import { buildApp } from '../src/app.js';
import { ApiKeys } from '../src/auth/keys.js';
import { loadConfig } from '../src/config.js';
import { AgentInteractive } from '../src/exec/agent/agent-interactive.js';
import { AgentTransport } from '../src/exec/agent/agent-transport.js';
import { WinstonFastifyLogger, silentWinston } from '../src/logger.js';
import { execTrueCall, hostPort } from './agent-call.js';
import { baselineBundle } from './interactive-baseline.js';
import type { Listening } from './listen.js';
import { measureInterleaved, report } from './stats.js';
import { readySession, StaticStore } from './static-store.js';
import { startDownloadFloor, startRawDownloadFloor } from './download-floor.js';
import { startStreamFloor } from './stream-floors.js';
import { startTcpPipe } from './tcp-pipe.js';

const NAMESPACE = 'bench';
const NAME = 'bench';
const UID = 'bench-uid';
const MASTER_KEY = Buffer.alloc(32, 3);
const API_KEY = 'bench-interactive-key-0123456789ab';
const TOKEN = deriveToken(MASTER_KEY, { namespace: NAMESPACE, name: NAME, uid: UID });
const MIB = 1024 * 1024;
/** How the parent hands a child what it serves (environment, not the command line). */
const ENV = {
  workspace: 'BENCH_INTERACTIVE_WORKSPACE',
  pieceBytes: 'BENCH_INTERACTIVE_PIECE_BYTES',
  downloadBytes: 'BENCH_INTERACTIVE_DOWNLOAD_BYTES',
  answerCpuMs: 'BENCH_INTERACTIVE_ANSWER_CPU_MS',
} as const;

const { values } = parseArgs({
  options: {
    serve: { type: 'string' },
    'agent-port': { type: 'string', default: '0' },
    iterations: { type: 'string', default: '1000' },
    warmup: { type: 'string', default: '100' },
    rounds: { type: 'string', default: '5' },
    'stream-mib': { type: 'string', default: '100' },
    'piece-mib': { type: 'string', default: '16' },
    'download-mib': { type: 'string', default: '100' },
    transfers: { type: 'string', default: '5' },
    'stream-content': { type: 'string', default: 'binary' },
    parts: { type: 'string', default: 'stream,download,latency' },
    // The per-key CPU share of reading agent answers (GATEWAY_KEY_ANSWER_CPU_MS_PER_SECOND; '' =
    // the production default): a streamed exec's NDJSON is parsed and re-checked line by line, and
    // that CPU is charged to the caller's key, so the share bounds one key's stream throughput.
    'answer-cpu-ms': { type: 'string', default: '' },
    'cpu-prof': { type: 'string' },
    baseline: { type: 'string' },
  },
});

/** A child's server: what it prints once listening (a port), and how to stop it. */
type Served = { port: number; close: () => Promise<void> };

function fromListening(l: Listening): Served {
  return { port: hostPort(l.url).port, close: () => l.close() };
}

/** The real agent, serving the workspace the parent filled; output cap = one piece. */
async function serveAgent(): Promise<Served> {
  const agent = await startAgent(
    agentConfig({
      token: TOKEN,
      host: '127.0.0.1',
      port: 0,
      workspace: process.env[ENV.workspace]!,
      logLevel: 'error',
      outputCapBytes: Number(process.env[ENV.pieceBytes]),
    }),
    { logSink: () => undefined },
  );
  return { port: agent.port, close: () => agent.close(0) };
}

/** The "sandbox's server" behind the port route: a small answer, and the download. */
async function serveServer(): Promise<Served> {
  const download = randomBytes(Number(process.env[ENV.downloadBytes]));
  const server = http.createServer((req, res) => {
    if (req.url === '/big') {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': download.length });
      res.end(download);
    } else {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok');
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** The gateway in front of the agent: production defaults except the limits a bench would hit. */
async function serveGateway(agentPort: number): Promise<Served> {
  const answerCpuMs = process.env[ENV.answerCpuMs];
  const config = loadConfig({
    GATEWAY_API_KEYS_FILE: '/unused',
    SANDBOX_MASTER_KEY_FILE: '/unused',
    GATEWAY_NAMESPACES: NAMESPACE,
    GATEWAY_AGENT_PORT: String(agentPort),
    GATEWAY_ALLOW_LOOPBACK_POD_IPS: 'true',
    GATEWAY_MAX_OUTPUT_BYTES: process.env[ENV.pieceBytes]!,
    GATEWAY_KEY_MAX_REQUESTS_PER_SECOND: '0',
    GATEWAY_KEY_MAX_CONCURRENT_REQUESTS: '0',
    GATEWAY_SHED_EVENT_LOOP_DELAY_MS: '0',
    ...(answerCpuMs ? { GATEWAY_KEY_ANSWER_CPU_MS_PER_SECOND: answerCpuMs } : {}),
  });
  const transport = new AgentTransport({
    masterKey: MASTER_KEY,
    port: agentPort,
    connectTimeoutMs: config.exec.connectTimeoutMs,
    connectRetries: config.exec.connectRetries,
    deadlineMarginMs: config.exec.deadlineMarginMs,
    maxOutputBytes: config.exec.maxOutputBytes,
    fileTimeoutMs: 120_000,
  });
  const app = await buildApp({
    config,
    logger: new WinstonFastifyLogger(silentWinston()),
    keys: ApiKeys.parse(JSON.stringify({ keys: [{ id: 'bench', key: API_KEY, namespaces: [NAMESPACE] }] }), [
      NAMESPACE,
    ]),
    store: new StaticStore([readySession(NAMESPACE, NAME, UID, '127.0.0.1')]),
    transports: { Agent: transport, KubernetesExec: transport },
    activity: { touch: () => undefined, begin: () => () => undefined },
    interactive: new AgentInteractive(transport),
  });
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  process.stderr.write(
    `[gateway] per-key answer CPU share: ${config.tenants.answerCpuMsPerSecond} ms/s (0: off)\n`,
  );
  return { port: hostPort(url).port, close: () => app.close() };
}

/** Runs one role in this (child) process; prints its port as a JSON line; ends when stdin ends. */
async function serve(role: string, agentPort: number): Promise<void> {
  const target = { host: '127.0.0.1', port: agentPort, token: TOKEN };
  const served =
    role === 'agent'
      ? await serveAgent()
      : role === 'server'
        ? await serveServer()
        : role === 'gateway'
          ? await serveGateway(agentPort)
          : role === 'pipe'
            ? fromListening(await startTcpPipe(target))
            : role === 'http' || role === 'ndjson'
              ? fromListening(await startStreamFloor(target, role))
              : // The download's floors: `agentPort` is the port server's here.
                role === 'download-pipe'
                ? fromListening(await startTcpPipe(target))
                : role === 'download-http'
                  ? fromListening(await startDownloadFloor(target))
                  : role === 'download-raw'
                    ? fromListening(await startRawDownloadFloor(target))
                    : undefined;
  if (!served) throw new Error(`unknown role ${role}`);
  process.stdout.write(`${JSON.stringify({ port: served.port })}\n`);
  process.stdin.resume();
  process.stdin.on('end', () => void served.close().finally(() => process.exit(0)));
}

/** A role in its own child process (this bundle again), with node options, e.g. --cpu-prof. */
interface Child {
  port: number;
  pid: number;
  close(): Promise<void>;
}

async function spawnChild(
  role: string,
  agentPort = 0,
  nodeArgs: string[] = [],
  bundle = process.argv[1]!,
): Promise<Child> {
  const child: ChildProcess = spawn(
    process.execPath,
    [...nodeArgs, bundle, '--serve', role, '--agent-port', String(agentPort)],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const line = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const nl = out.indexOf('\n');
      if (nl >= 0) resolve(out.slice(0, nl));
    });
    child.once('exit', (code) => reject(new Error(`${role} exited (${code}) before it started`)));
  });
  return {
    port: (JSON.parse(line) as { port: number }).port,
    pid: child.pid!,
    close: async () => {
      child.stdin!.end();
      await exited;
    },
  };
}

/** CPU milliseconds (user + system) a process has used, from /proc (10 ms ticks). */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) * 10; // utime, stime: fields 14, 15
}

const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 64 });

/**
 * One request; resolves with the number of body bytes once the answer is complete, or with
 * `inspect(body)` of the whole body when given (the untimed warm-up checks what it got).
 */
function request(
  url: string,
  opts: {
    method?: string;
    headers?: Record<string, string>;
    body?: string;
    inspect?: (body: Buffer) => number;
  } = {},
): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method: opts.method ?? 'GET', headers: opts.headers ?? {}, agent: keepAlive },
      (res) => {
        let n = 0;
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => {
          n += c.length;
          if (opts.inspect) chunks.push(c);
        });
        res.on('end', () => {
          if (res.statusCode !== 200) return reject(new Error(`${url} answered ${res.statusCode}`));
          try {
            resolve(opts.inspect ? opts.inspect(Buffer.concat(chunks)) : n);
          } catch (err) {
            reject(err instanceof Error ? err : new Error(String(err)));
          }
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(opts.body);
  });
}

/** The decoded stdout bytes of an exec stream answer; throws unless it ends in exit 0. */
function streamedStdout(body: Buffer): number {
  let bytes = 0;
  let exit: unknown;
  for (const line of body.toString('utf8').split('\n')) {
    if (!line) continue;
    const ev = JSON.parse(line) as {
      type: string;
      data?: string;
      encoding?: BufferEncoding;
      exitCode?: number;
    };
    if (ev.type === 'stdout')
      bytes += Buffer.byteLength(ev.data!, ev.encoding === 'base64' ? 'base64' : 'utf8');
    else if (ev.type === 'exit') exit = ev.exitCode;
    else throw new Error(`unexpected ${ev.type} event`);
  }
  if (exit !== 0) throw new Error(`cat exited ${String(exit)}`);
  return bytes;
}

/**
 * `bytes` of ASCII text in lines of 8-120 characters (words, some quoted, some tab-separated): what
 * a `cat` of a log or source file streams, JSON-escaped (\n, \t, \") by the agent.
 */
function textContent(bytes: number): Buffer {
  const words = [
    'const',
    'value',
    'return',
    'the',
    'request',
    '"quoted"',
    'id=42',
    '{',
    '}',
    'ok:',
    'if',
    '\t',
  ];
  let seed = 15;
  const next = (n: number): number => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return (seed >>> 8) % n;
  };
  let block = '';
  while (block.length < MIB) {
    let line = '';
    for (let target = 8 + next(112); line.length < target;) line += words[next(words.length)] + ' ';
    block += `${line.trimEnd()}\n`;
  }
  const out = Buffer.alloc(bytes);
  for (let off = 0; off < bytes; off += MIB) out.write(block, off, Math.min(MIB, bytes - off), 'latin1');
  return out;
}

const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** One mode of a throughput measurement: a transfer and the proxy's pid. */
interface TransferMode {
  label: string;
  /** One transfer; `check`: untimed, resolves with the useful bytes of each answer. */
  run: (check?: boolean) => Promise<number[]>;
  /** The process in the middle (none for direct). */
  pid?: number;
}

/**
 * `transfers` rounds of one transfer per mode, the order rotated per round; MB/s of `bytes`
 * useful bytes, and the CPU ms the middle process and the agent spent on each transfer.
 */
async function measureTransfers(
  modes: readonly TransferMode[],
  bytes: number,
  transfers: number,
  agentPid: number,
): Promise<Map<string, { rates: number[]; midCpu: number[]; agentCpu: number[] }>> {
  const out = new Map(
    modes.map((m) => [m.label, { rates: [] as number[], midCpu: [] as number[], agentCpu: [] as number[] }]),
  );
  // An untimed, checked warm-up transfer per mode: every mode must deliver all the bytes.
  for (const m of modes) {
    const got = (await m.run(true)).reduce((a, b) => a + b, 0);
    if (got !== bytes) throw new Error(`${m.label}: got ${got} bytes, not ${bytes}`);
  }
  for (let r = 0; r < transfers; r++) {
    for (let k = 0; k < modes.length; k++) {
      const m = modes[(k + r) % modes.length]!;
      const mid0 = m.pid ? cpuMs(m.pid) : 0;
      const agent0 = cpuMs(agentPid);
      const t0 = performance.now();
      await m.run();
      const seconds = (performance.now() - t0) / 1000;
      const o = out.get(m.label)!;
      o.rates.push(bytes / 1e6 / seconds);
      o.midCpu.push(m.pid ? cpuMs(m.pid) - mid0 : 0);
      o.agentCpu.push(cpuMs(agentPid) - agent0);
    }
    process.stderr.write(`[bench] transfer round ${r + 1}/${transfers} done\n`);
  }
  return out;
}

function printTransfers(
  title: string,
  results: Map<string, { rates: number[]; midCpu: number[]; agentCpu: number[] }>,
  ratios: Array<[string, string]>,
): void {
  console.log(`\n${title}`);
  console.log(
    'mode                       MB/s median   (all)                          proxy CPU ms  agent CPU ms (median)',
  );
  for (const [label, r] of results) {
    console.log(
      `${label.padEnd(26)}${median(r.rates).toFixed(1).padStart(12)}   (${r.rates.map((x) => x.toFixed(0)).join(' ')})`.padEnd(
        72,
      ) + `${String(median(r.midCpu)).padStart(12)}${String(median(r.agentCpu)).padStart(14)}`,
    );
  }
  for (const [num, den] of ratios) {
    const a = results.get(num);
    const b = results.get(den);
    if (a && b) console.log(`${num} / ${den}: ${(median(a.rates) / median(b.rates)).toFixed(2)}x`);
  }
}

async function main(): Promise<void> {
  const iterations = Number(values.iterations);
  const warmup = Number(values.warmup);
  const rounds = Number(values.rounds);
  const streamBytes = Number(values['stream-mib']) * MIB;
  const pieceBytes = Math.min(Number(values['piece-mib']) * MIB, 16 * MIB);
  const downloadBytes = Number(values['download-mib']) * MIB;
  const transfers = Number(values.transfers);
  const parts = new Set(values.parts.split(','));
  if (!['binary', 'text'].includes(values['stream-content']))
    throw new Error('--stream-content: binary or text');
  const text = values['stream-content'] === 'text';

  // The file, in pieces of at most one output cap each (part-0.bin, part-1.bin, ...).
  const workspace = mkdtempSync(join(tmpdir(), 'gw-bench-interactive-'));
  const pieces: string[] = [];
  for (let off = 0; off < streamBytes; off += pieceBytes) {
    const name = `part-${pieces.length}.bin`;
    const size = Math.min(pieceBytes, streamBytes - off);
    writeFileSync(join(workspace, name), text ? textContent(size) : randomBytes(size));
    pieces.push(name);
  }
  process.env[ENV.workspace] = workspace;
  process.env[ENV.pieceBytes] = String(pieceBytes);
  process.env[ENV.downloadBytes] = String(downloadBytes);
  if (values['answer-cpu-ms']) process.env[ENV.answerCpuMs] = values['answer-cpu-ms'];

  const children: Child[] = [];
  const start = async (
    role: string,
    agentPort?: number,
    nodeArgs?: string[],
    bundle?: string,
  ): Promise<Child> => {
    const c = await spawnChild(role, agentPort, nodeArgs, bundle);
    children.push(c);
    return c;
  };
  const baseline = values.baseline ? await baselineBundle(values.baseline) : undefined;
  try {
    const agent = await start('agent');
    const server = await start('server');
    const prof = values['cpu-prof'];
    const profArgs = prof ? ['--cpu-prof', '--cpu-prof-dir', prof] : [];
    const gateway = await start('gateway', agent.port, profArgs);
    const old = baseline ? await start('gateway', agent.port, profArgs, baseline.bundle) : undefined;
    const pipe = await start('pipe', agent.port, profArgs);
    const httpFloor = await start('http', agent.port, profArgs);
    const ndjsonFloor = await start('ndjson', agent.port, profArgs);
    const downloadPipe = await start('download-pipe', server.port, profArgs);
    const downloadHttp = await start('download-http', server.port, profArgs);
    const downloadRaw = await start('download-raw', server.port, profArgs);
    if (prof) {
      const pids = {
        gateway,
        ...(old ? { baseline: old } : {}),
        pipe,
        http: httpFloor,
        ndjson: ndjsonFloor,
        'download pipe': downloadPipe,
        'download http': downloadHttp,
        'download raw': downloadRaw,
      };
      console.log(
        `profiles in ${prof}: ${Object.entries(pids)
          .map(([k, c]) => `${k} ${c.pid}`)
          .join(', ')}`,
      );
    }
    const local = (port: number): string => `http://127.0.0.1:${port}`;
    const direct = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
    const viaKey = { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' };
    const catBodies = pieces.map((p) => JSON.stringify({ command: `cat ${p}`, timeoutSeconds: 120 }));
    /** The file's pieces one exec each; resolves with each answer's size (checked: its stdout bytes). */
    const catAll =
      (url: string, headers: Record<string, string>) =>
      async (check?: boolean): Promise<number[]> => {
        const sizes: number[] = [];
        for (const body of catBodies) {
          sizes.push(
            await request(url, {
              method: 'POST',
              headers,
              body,
              ...(check ? { inspect: streamedStdout } : {}),
            }),
          );
        }
        return sizes;
      };
    console.log(
      `topology: client (this process), agent, port server, gateway and each floor in its own process; ` +
        `stream: cat of ${streamBytes / MIB} MiB of ${text ? 'ASCII text' : 'random bytes'} in ${pieces.length} execs of <= ${pieceBytes / MIB} MiB; ` +
        `download: ${downloadBytes / MIB} MiB; ${transfers} transfers per mode, order rotated per round`,
    );

    if (parts.has('stream')) {
      const results = await measureTransfers(
        [
          { label: 'direct', run: catAll(`${local(agent.port)}/v1/exec/stream`, direct) },
          {
            label: 'gateway',
            run: catAll(`${local(gateway.port)}/v1/sessions/${NAME}/exec/stream`, viaKey),
            pid: gateway.pid,
          },
          ...(old
            ? [
                {
                  label: `gateway ${baseline!.commit}`,
                  run: catAll(`${local(old.port)}/v1/sessions/${NAME}/exec/stream`, viaKey),
                  pid: old.pid,
                },
              ]
            : []),
          { label: 'tcp pipe', run: catAll(`${local(pipe.port)}/v1/exec/stream`, direct), pid: pipe.pid },
          {
            label: 'node:http pipe floor',
            run: catAll(`${local(httpFloor.port)}/v1/exec/stream`, viaKey),
            pid: httpFloor.pid,
          },
          {
            label: 'ndjson re-encode floor',
            run: catAll(`${local(ndjsonFloor.port)}/v1/exec/stream`, viaKey),
            pid: ndjsonFloor.pid,
          },
        ],
        streamBytes,
        transfers,
        agent.pid,
      );
      printTransfers(`exec stream: cat ${streamBytes / MIB} MiB`, results, [
        ['gateway', 'direct'],
        ['tcp pipe', 'direct'],
        ['node:http pipe floor', 'direct'],
        ['ndjson re-encode floor', 'direct'],
        ['gateway', 'tcp pipe'],
        ['gateway', 'node:http pipe floor'],
        ['gateway', 'ndjson re-encode floor'],
        ...(baseline ? [['gateway', `gateway ${baseline.commit}`] as [string, string]] : []),
      ]);
    }

    if (parts.has('download')) {
      const once =
        (url: string, headers: Record<string, string> = {}) =>
        async (): Promise<number[]> => [await request(url, { headers })];
      const results = await measureTransfers(
        [
          { label: 'direct', run: once(`${local(server.port)}/big`) },
          {
            label: 'port route',
            run: once(`${local(gateway.port)}/v1/sessions/${NAME}/ports/${server.port}/big`, viaKey),
            pid: gateway.pid,
          },
          ...(old
            ? [
                {
                  label: `port route ${baseline!.commit}`,
                  run: once(`${local(old.port)}/v1/sessions/${NAME}/ports/${server.port}/big`, viaKey),
                  pid: old.pid,
                },
              ]
            : []),
          { label: 'tcp pipe', run: once(`${local(downloadPipe.port)}/big`), pid: downloadPipe.pid },
          {
            label: 'node:http pipe floor',
            run: once(`${local(downloadHttp.port)}/big`),
            pid: downloadHttp.pid,
          },
          {
            label: 'raw-socket client floor',
            run: once(`${local(downloadRaw.port)}/big`),
            pid: downloadRaw.pid,
          },
        ],
        downloadBytes,
        transfers,
        server.pid,
      );
      printTransfers(
        `port route download ${downloadBytes / MIB} MiB ("agent CPU" = the port server's)`,
        results,
        [
          ['port route', 'direct'],
          ['tcp pipe', 'direct'],
          ['node:http pipe floor', 'direct'],
          ['raw-socket client floor', 'direct'],
          ['port route', 'tcp pipe'],
          ['port route', 'node:http pipe floor'],
          ['port route', 'raw-socket client floor'],
          ...(baseline ? [['port route', `port route ${baseline.commit}`] as [string, string]] : []),
        ],
      );
    }

    if (parts.has('latency')) {
      const execDirect = execTrueCall({
        host: '127.0.0.1',
        port: agent.port,
        path: '/v1/exec',
        token: TOKEN,
      });
      const execGateway = execTrueCall({
        host: '127.0.0.1',
        port: gateway.port,
        path: `/v1/sessions/${NAME}/exec`,
        token: API_KEY,
      });
      const rows = await measureInterleaved(
        [
          {
            mode: 'port GET direct',
            call: async () => void (await request(`${local(server.port)}/`)),
            iterations,
            warmup,
          },
          {
            mode: 'port GET via gateway',
            call: async () =>
              void (await request(`${local(gateway.port)}/v1/sessions/${NAME}/ports/${server.port}/`, {
                headers: viaKey,
              })),
            iterations,
            warmup,
          },
          { mode: 'exec true direct', call: execDirect.call, iterations, warmup },
          { mode: 'exec true via gateway', call: execGateway.call, iterations, warmup },
        ],
        { rounds, concurrency: 8, durationMs: 4000 },
      );
      report(rows, [
        ['port route / direct', 'port GET via gateway', 'port GET direct'],
        ['exec via gateway / direct', 'exec true via gateway', 'exec true direct'],
      ]);
      const by = new Map(rows.map((r) => [r.mode, r]));
      const portOverhead = by.get('port GET via gateway')!.p50Ms - by.get('port GET direct')!.p50Ms;
      const execOverhead = by.get('exec true via gateway')!.p50Ms - by.get('exec true direct')!.p50Ms;
      console.log(
        `p50 overhead of the gateway: port route ${portOverhead.toFixed(3)} ms, exec ${execOverhead.toFixed(3)} ms` +
          ` (goal: port route <= exec: ${portOverhead <= execOverhead ? 'met' : 'not met'})`,
      );
      execDirect.close();
      execGateway.close();
    }
  } finally {
    keepAlive.destroy();
    await Promise.all(children.map((c) => c.close()));
    rmSync(workspace, { recursive: true, force: true });
    baseline?.remove();
  }
}

if (values.serve) await serve(values.serve, Number(values['agent-port']));
else await main();
