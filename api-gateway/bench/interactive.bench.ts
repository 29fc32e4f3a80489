/**
 * The interactive routes of issue 15, side by side with direct calls in the same run
 * (make bench-gateway-interactive), the real gateway code and a real agent on 127.0.0.1, all in
 * this process (no Kubernetes):
 * - stream throughput (MB/s of the file's bytes) of `cat` of a file through the gateway's exec
 *   stream vs straight to the agent's. One streamed exec is capped at the output cap, at most
 *   16 MiB (GATEWAY_MAX_OUTPUT_BYTES' maximum), so the file is 16 MiB here: a 100 MiB `cat`
 *   cannot pass the gateway in one exec stream;
 * - port-route throughput: a 100 MiB download from a server on a "sandbox port" through
 *   /v1/sessions/{name}/ports/{port}/ vs straight from that server;
 * - port-route HTTP p50/p99 of a small GET vs direct, next to the gateway's exec overhead (exec
 *   `true` through the gateway vs direct), the issue's goal being port p50 overhead <= exec's.
 * Modes are interleaved round by round (stats.ts). Prints raw figures and the ratios.
 * Usage: run.mjs [--iterations 1000] [--warmup 100] [--rounds 5] [--stream-mib 16] [--download-mib 100] [--transfers 5]
 *        [--answer-cpu-ms N] (the per-key CPU share of reading answers; default: the gateway's)
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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
import { AgentInteractive } from '../src/exec/agent-interactive.js';
import { AgentTransport } from '../src/exec/agent-transport.js';
import { WinstonFastifyLogger, silentWinston } from '../src/logger.js';
import { execTrueCall } from './agent-call.js';
import { measureInterleaved, report } from './stats.js';
import { readySession, StaticStore } from './static-store.js';

const NAMESPACE = 'bench';
const NAME = 'bench';
const UID = 'bench-uid';
const MASTER_KEY = Buffer.alloc(32, 3);
const API_KEY = 'bench-interactive-key-0123456789ab';
const MIB = 1024 * 1024;

const { values } = parseArgs({
  options: {
    iterations: { type: 'string', default: '1000' },
    warmup: { type: 'string', default: '100' },
    rounds: { type: 'string', default: '5' },
    'stream-mib': { type: 'string', default: '16' },
    'download-mib': { type: 'string', default: '100' },
    transfers: { type: 'string', default: '5' },
    // The per-key CPU share of reading agent answers (GATEWAY_KEY_ANSWER_CPU_MS_PER_SECOND; '' =
    // the production default): a streamed exec's NDJSON is parsed and re-checked line by line, and
    // that CPU is charged to the caller's key, so the share bounds one key's stream throughput.
    'answer-cpu-ms': { type: 'string', default: '' },
  },
});

const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 64 });

/** One request; resolves with the number of body bytes once the answer is complete. */
function request(
  url: string,
  opts: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method: opts.method ?? 'GET', headers: opts.headers ?? {}, agent: keepAlive },
      (res) => {
        let n = 0;
        res.on('data', (c: Buffer) => (n += c.length));
        res.on('end', () =>
          res.statusCode === 200 ? resolve(n) : reject(new Error(`${url} answered ${res.statusCode}`)),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(opts.body);
  });
}

/** MB/s (10^6 bytes) of `bytes` useful bytes per transfer, over `n` transfers, best and median. */
async function transferRate(
  run: () => Promise<number>,
  bytes: number,
  n: number,
): Promise<{ median: number; best: number }> {
  const rates: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await run();
    rates.push(bytes / 1e6 / ((performance.now() - t0) / 1000));
  }
  rates.sort((a, b) => a - b);
  return { median: rates[Math.floor(rates.length / 2)]!, best: rates.at(-1)! };
}

async function main(): Promise<void> {
  const iterations = Number(values.iterations);
  const warmup = Number(values.warmup);
  const rounds = Number(values.rounds);
  const streamBytes = Number(values['stream-mib']) * MIB;
  const downloadBytes = Number(values['download-mib']) * MIB;
  const transfers = Number(values.transfers);

  const workspace = mkdtempSync(join(tmpdir(), 'gw-bench-interactive-'));
  writeFileSync(join(workspace, 'stream.bin'), randomBytes(streamBytes));
  const download = randomBytes(downloadBytes);
  const token = deriveToken(MASTER_KEY, { namespace: NAMESPACE, name: NAME, uid: UID });
  const agent = await startAgent(
    agentConfig({
      token,
      host: '127.0.0.1',
      port: 0,
      workspace,
      logLevel: 'error',
      outputCapBytes: streamBytes,
    }),
    { logSink: () => undefined },
  );
  // The "sandbox's server": a small answer, and the download.
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
  const serverPort = (server.address() as AddressInfo).port;

  const config = loadConfig({
    GATEWAY_API_KEYS_FILE: '/unused',
    SANDBOX_MASTER_KEY_FILE: '/unused',
    GATEWAY_NAMESPACES: NAMESPACE,
    GATEWAY_AGENT_PORT: String(agent.port),
    GATEWAY_ALLOW_LOOPBACK_POD_IPS: 'true',
    GATEWAY_MAX_OUTPUT_BYTES: String(Math.min(streamBytes, 16 * MIB)),
    GATEWAY_KEY_MAX_REQUESTS_PER_SECOND: '0',
    GATEWAY_KEY_MAX_CONCURRENT_REQUESTS: '0',
    GATEWAY_SHED_EVENT_LOOP_DELAY_MS: '0',
    ...(values['answer-cpu-ms'] ? { GATEWAY_KEY_ANSWER_CPU_MS_PER_SECOND: values['answer-cpu-ms'] } : {}),
  });
  const transport = new AgentTransport({
    masterKey: MASTER_KEY,
    port: agent.port,
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
  const gateway = await app.listen({ port: 0, host: '127.0.0.1' });
  const gw = new URL(gateway);
  const agentUrl = `http://127.0.0.1:${agent.port}`;
  const direct = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const viaKey = { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' };
  const catBody = JSON.stringify({ command: 'cat stream.bin', timeoutSeconds: 120 });

  try {
    console.log(`per-key answer CPU share: ${config.tenants.answerCpuMsPerSecond} ms/s (0: off)`);
    console.log(
      `stream: cat of ${streamBytes / MIB} MiB through exec/stream; download: ${downloadBytes / MIB} MiB; ${transfers} transfers each, alternating`,
    );
    const streams = { direct: [] as number[], gateway: [] as number[] };
    const downloads = { direct: [] as number[], gateway: [] as number[] };
    for (let i = 0; i < transfers; i++) {
      streams.direct.push(
        (
          await transferRate(
            () => request(`${agentUrl}/v1/exec/stream`, { method: 'POST', headers: direct, body: catBody }),
            streamBytes,
            1,
          )
        ).median,
      );
      streams.gateway.push(
        (
          await transferRate(
            () =>
              request(`${gateway}/v1/sessions/${NAME}/exec/stream`, {
                method: 'POST',
                headers: viaKey,
                body: catBody,
              }),
            streamBytes,
            1,
          )
        ).median,
      );
      downloads.direct.push(
        (await transferRate(() => request(`http://127.0.0.1:${serverPort}/big`), downloadBytes, 1)).median,
      );
      downloads.gateway.push(
        (
          await transferRate(
            () => request(`${gateway}/v1/sessions/${NAME}/ports/${serverPort}/big`, { headers: viaKey }),
            downloadBytes,
            1,
          )
        ).median,
      );
    }
    const med = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const line = (label: string, d: number[], g: number[]): void =>
      console.log(
        `${label.padEnd(34)} direct ${med(d).toFixed(1).padStart(7)} MB/s   gateway ${med(g).toFixed(1).padStart(7)} MB/s   ratio ${(med(g) / med(d)).toFixed(2)}x` +
          `   (all direct: ${d.map((x) => x.toFixed(0)).join(' ')}; gateway: ${g.map((x) => x.toFixed(0)).join(' ')})`,
      );
    line(`exec stream cat ${streamBytes / MIB} MiB`, streams.direct, streams.gateway);
    line(`port route download ${downloadBytes / MIB} MiB`, downloads.direct, downloads.gateway);

    const execDirect = execTrueCall({ host: '127.0.0.1', port: agent.port, path: '/v1/exec', token });
    const execGateway = execTrueCall({
      host: gw.hostname,
      port: Number(gw.port),
      path: `/v1/sessions/${NAME}/exec`,
      token: API_KEY,
    });
    const rows = await measureInterleaved(
      [
        {
          mode: 'port GET direct',
          call: async () => void (await request(`http://127.0.0.1:${serverPort}/`)),
          iterations,
          warmup,
        },
        {
          mode: 'port GET via gateway',
          call: async () =>
            void (await request(`${gateway}/v1/sessions/${NAME}/ports/${serverPort}/`, { headers: viaKey })),
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
      `p50 overhead of the gateway: port route ${portOverhead.toFixed(3)} ms, exec ${execOverhead.toFixed(3)} ms`,
    );
    execDirect.close();
    execGateway.close();
  } finally {
    keepAlive.destroy();
    await app.close();
    server.closeAllConnections();
    server.close();
    await agent.close(0);
    rmSync(workspace, { recursive: true, force: true });
  }
}

await main();
