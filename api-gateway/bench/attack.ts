/**
 * A hostile tenant for the bench: workers that keep tenant A's session (served by the hostile
 * agent, test-e2e/hostile-agent) busy with the attacks of issue 12 through the gateway, while the
 * bench measures tenant B's exec. The workers run in their own process (`--serve attacker`) so
 * reading the attack answers costs the measuring process nothing; the parent starts and stops
 * them around the slices of the "under attack" mode (stats.ts hooks).
 */
import { spawn } from 'node:child_process';
import http from 'node:http';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

import { hostPort } from './agent-call.js';

/** What each worker sends in turn: exec or streamed exec of a hostile command. */
export const ATTACK_MIX: ReadonlyArray<{ stream: boolean; command: string }> = [
  { stream: false, command: 'hostile:tiny-chunks:12000000' },
  { stream: false, command: 'hostile:small-chunks:12000000' },
  { stream: false, command: 'hostile:nested:4000000' },
  { stream: false, command: 'hostile:many-keys:4000000' },
  { stream: false, command: 'hostile:huge-output:4000000' },
  { stream: false, command: 'hostile:oversized' },
  { stream: false, command: 'hostile:endless' },
  { stream: false, command: 'hostile:valid-max' },
  { stream: false, command: 'hostile:bad-json' },
  { stream: true, command: 'hostile:stream-endless' },
  { stream: true, command: 'hostile:stream-tiny' },
  { stream: true, command: 'hostile:stream-long-line' },
];

/** Where the attack goes. */
export interface AttackTarget {
  gatewayUrl: string;
  apiKey: string;
  session: string;
  workers: number;
}

/** Answers seen by status (e.g. 502, 503, 200), and transport failures. */
type Counts = Record<string, number>;

/** One request; resolves with its status (or "error") once the body was read or cut. */
function attackOnce(
  t: AttackTarget,
  agent: http.Agent,
  step: { stream: boolean; command: string },
): Promise<string> {
  const body = JSON.stringify({ command: step.command, timeoutSeconds: 10 });
  const path = `/v1/sessions/${t.session}/exec${step.stream ? '/stream' : ''}`;
  return new Promise((resolve) => {
    const req = http.request(
      {
        ...hostPort(t.gatewayUrl),
        method: 'POST',
        path,
        agent,
        headers: {
          authorization: `Bearer ${t.apiKey}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(String(res.statusCode)));
        res.on('error', () => resolve(`${res.statusCode} cut`));
      },
    );
    req.on('error', () => resolve('error'));
    req.end(body);
  });
}

/** The attacker process: reads `start` and `stop` lines; answers `stop` with the counts. */
export async function serveAttacker(t: AttackTarget): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: t.workers });
  let running = false;
  let counts: Counts = {};
  let loops: Array<Promise<void>> = [];
  const loop = async (w: number): Promise<void> => {
    for (let i = w; running; i++) {
      const status = await attackOnce(t, agent, ATTACK_MIX[i % ATTACK_MIX.length]!);
      counts[status] = (counts[status] ?? 0) + 1;
    }
  };
  process.stdout.write('{"ready":true}\n');
  for await (const line of createInterface({ input: process.stdin })) {
    if (line === 'start' && !running) {
      running = true;
      counts = {};
      loops = Array.from({ length: t.workers }, (_v, w) => loop(w));
      process.stdout.write('started\n');
    } else if (line === 'stop') {
      running = false;
      await Promise.all(loops);
      process.stdout.write(`${JSON.stringify(counts)}\n`);
    }
  }
  agent.destroy();
}

/** The parent's handle on an attacker process. */
export interface Attacker {
  start(): Promise<void>;
  /** Stops the workers (each finishes its request) and returns what they got. */
  stop(): Promise<Counts>;
  close(): Promise<void>;
}

/** Starts an attacker process (this same bundle, `--serve attacker`). */
export async function spawnAttacker(t: AttackTarget): Promise<Attacker> {
  // At the lowest priority, as the hostile agent: see startHostileAgent.
  const child = spawn(
    'nice',
    [
      '-n',
      '19',
      process.execPath,
      process.argv[1]!,
      '--serve',
      'attacker',
      '--gateway-url',
      t.gatewayUrl,
      '--session',
      t.session,
      '--workers',
      String(t.workers),
    ],
    { stdio: ['pipe', 'pipe', 'inherit'], env: { ...process.env, BENCH_ATTACK_KEY: t.apiKey } },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const next = async (): Promise<string> => {
    const r = await lines.next();
    if (r.done) throw new Error('the attacker process ended');
    return r.value;
  };
  await next(); // ready
  return {
    start: async () => {
      child.stdin.write('start\n');
      await next();
    },
    stop: async () => {
      child.stdin.write('stop\n');
      return JSON.parse(await next()) as Counts;
    },
    close: async () => {
      child.stdin.end();
      await exited;
    },
  };
}

/**
 * The hostile agent (test-e2e/hostile-agent/hostile-agent.mjs) on host:port, its own process, at
 * the lowest CPU priority (nice 19), as is the attacking client: in a deployment they are a pod
 * with its own CPU limit and a remote client, not neighbours of the gateway on its cores. What the
 * bench then measures against tenant B is the gateway's own work for the attack.
 */
export async function startHostileAgent(
  root: string,
  host: string,
  port: number,
): Promise<{ close(): Promise<void> }> {
  const script = join(root, 'test-e2e/hostile-agent/hostile-agent.mjs');
  const child = spawn('nice', ['-n', '19', process.execPath, script], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { PATH: process.env.PATH ?? '', HOST: host, PORT: String(port) },
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  if ((await lines.next()).done) throw new Error('the hostile agent did not start');
  return {
    close: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}
