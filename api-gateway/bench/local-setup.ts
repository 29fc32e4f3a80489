/**
 * Local mode: the gateway, a trivial proxy (trivial-proxy.ts) and a real agent on 127.0.0.1, no
 * Kubernetes; either all in this process (the default: every microsecond of CPU any of them spends
 * is on the measured path) or each in its own child process (`--split`, the topology of a
 * deployment: work a server does after writing its answer overlaps with the caller's). The
 * session store is a static one-session store pointing at the agent, with that session's Pod as
 * the Pod cache holds it; everything else (auth, schema validation, readiness, the Pod identity
 * check and the dial-time address lookup, token derivation, keep-alive pool, activity throttling,
 * info logging into a pipe read by another process) is the real code. A second gateway with the
 * Pod identity check off (GATEWAY_POD_IDENTITY_CHECK=false) measures what the check costs. It
 * measures the gateway's own overhead; KubernetesExec cannot be measured here.
 */
import { execFileSync, spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { deriveToken } from '@sandbox-platform/api';

import { agentConfig, startAgent } from '../../sandbox-agent/src/index.js';
import { ThrottledActivityReporter } from '../src/activity/reporter.js';
import { buildApp } from '../src/app.js';
import { ApiKeys } from '../src/auth/keys.js';
import { loadConfig } from '../src/config.js';
import { AgentTransport } from '../src/exec/agent/agent-transport.js';
import { WinstonFastifyLogger, createWinston } from '../src/logger.js';
import { dialLookup } from '../src/sessions/pod-identity.js';
import { REFERENCES, referenceByRole, type AgentTarget } from './references.js';
import { readySession, StaticStore } from './static-store.js';

const NAMESPACE = 'bench';
const NAME = 'bench';
const UID = 'bench-uid';
const API_KEY = 'bench-api-key-0123456789abcdef';
const MASTER_KEY = Buffer.alloc(32, 1);
/** The hostile tenant of the attack modes: its own key, namespace and session. */
export const EVIL = { key: 'bench-evil-key-0123456789abcdef', namespace: 'evil', session: 'evil' };
/** Where the hostile agent listens: another loopback address, the agent's port (as pods do). */
export const HOSTILE_IP = '127.0.0.2';
/** Environment variable telling a child gateway to serve the hostile tenant's session too. */
const HOSTILE_ENV = 'BENCH_HOSTILE_IP';

/** What the local mode measures against. */
export interface LocalSetup {
  agentUrl: { host: string; port: number; token: string };
  gatewayUrl: string;
  /** The same gateway with the Pod identity check off (the check's cost). */
  gatewayNoCheckUrl: string;
  /** URL of each reference (references.ts), by role. */
  references: Record<string, string>;
  /**
   * Split mode: the process of each server by role ('gateway', 'gateway-no-pod-check' and the
   * references'), whose CPU per call the bench reports; none in the one-process mode.
   */
  pids: Record<string, number>;
  apiKey: string;
  session: string;
  close(): Promise<void>;
}

/** A server of the local mode and how to stop it. */
interface Running {
  close(): Promise<void>;
}

/** The bench session's agent token. */
export const AGENT_TOKEN = deriveToken(MASTER_KEY, { namespace: NAMESPACE, name: NAME, uid: UID });

/** A real agent on 127.0.0.1 with the bench session's token. */
export async function startLocalAgent(): Promise<Running & { port: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'gw-bench-'));
  const agent = await startAgent(
    agentConfig({ token: AGENT_TOKEN, host: '127.0.0.1', port: 0, workspace: dir, logLevel: 'error' }),
    { logSink: () => undefined },
  );
  return {
    port: agent.port,
    close: async () => {
      await agent.close(0);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The gateway (real code, static store) in front of the agent on 127.0.0.1:agentPort; with
 * `hostileIp`, also tenant EVIL's session on the hostile agent at hostileIp:agentPort. Production
 * defaults except the per-key rate, raised so the bench's single caller (about 1500 calls a
 * second) is never refused: the limiter still runs on every call; `podIdentityCheck: false` turns
 * the Pod identity check off (the benchmark's comparison only).
 */
export async function startLocalGateway(
  agentPort: number,
  opts: { hostileIp?: string; podIdentityCheck?: boolean } = {},
): Promise<Running & { url: string }> {
  const namespaces = opts.hostileIp ? [NAMESPACE, EVIL.namespace] : [NAMESPACE];
  const config = loadConfig({
    GATEWAY_API_KEYS_FILE: '/unused',
    SANDBOX_MASTER_KEY_FILE: '/unused',
    GATEWAY_NAMESPACES: namespaces.join(','),
    GATEWAY_AGENT_PORT: String(agentPort),
    GATEWAY_ALLOW_LOOPBACK_POD_IPS: 'true',
    GATEWAY_KEY_MAX_REQUESTS_PER_SECOND: '1000000',
    GATEWAY_POD_IDENTITY_CHECK: String(opts.podIdentityCheck ?? true),
  });
  const sessions = [readySession(NAMESPACE, NAME, UID, '127.0.0.1')];
  if (opts.hostileIp) sessions.push(readySession(EVIL.namespace, EVIL.session, 'evil-uid', opts.hostileIp));
  const keys = [{ id: 'bench', key: API_KEY, namespaces: [NAMESPACE] }];
  if (opts.hostileIp) keys.push({ id: 'evil', key: EVIL.key, namespaces: [EVIL.namespace] });
  // The production logger at its default level (info), writing its JSON lines synchronously (as
  // stdout to a pipe does) into a pipe that another process reads, as the container runtime reads
  // a container's stdout: the per-exec log line, and the reader it wakes, are part of what a call
  // costs.
  const logPipe = await startLogReader();
  const logger = new WinstonFastifyLogger(
    createWinston('info', { write: (text) => writeSync(logPipe.fd, text) }),
  );
  const store = new StaticStore(sessions);
  const dialPolicy = { address: config.addressPolicy, podIdentityCheck: config.podIdentityCheck };
  const transport = new AgentTransport({
    masterKey: MASTER_KEY,
    // The production dial-time lookup (compose.ts), on the static store.
    lookup: dialLookup(store, dialPolicy),
    port: agentPort,
    connectTimeoutMs: config.exec.connectTimeoutMs,
    connectRetries: config.exec.connectRetries,
    deadlineMarginMs: config.exec.deadlineMarginMs,
    maxOutputBytes: config.exec.maxOutputBytes,
    fileTimeoutMs: 60_000,
  });
  const activity = new ThrottledActivityReporter({
    patcher: { patchLastActivity: () => Promise.resolve() },
    throttleMs: config.activityThrottleMs,
    log: logger,
  });
  const app = await buildApp({
    config,
    logger,
    keys: ApiKeys.parse(JSON.stringify({ keys }), namespaces),
    store,
    transports: { Agent: transport, KubernetesExec: transport },
    activity,
  });
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  return {
    url,
    close: async () => {
      await app.close();
      logPipe.close();
    },
  };
}

/** A FIFO read (and discarded) by a `cat` process: where the gateway's log lines go. */
async function startLogReader(): Promise<{ fd: number; close: () => void }> {
  const dir = mkdtempSync(join(tmpdir(), 'gw-bench-log-'));
  const fifo = join(dir, 'log');
  execFileSync('mkfifo', [fifo]);
  const reader = spawn('cat', [fifo], { stdio: ['ignore', 'ignore', 'inherit'] });
  await new Promise((resolve) => reader.once('spawn', resolve));
  const fd = openSync(fifo, 'w'); // blocks until cat has opened it for reading
  return {
    fd,
    close: () => {
      closeSync(fd); // cat reads the end of file and exits
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The local agent on 127.0.0.1:port with the bench session's token. */
export function localAgentTarget(port: number): AgentTarget {
  return { host: '127.0.0.1', port, token: AGENT_TOKEN };
}

/** The environment variable that hands a child role its agent token (not on its command line). */
const TOKEN_ENV = 'BENCH_AGENT_TOKEN';

/**
 * Runs one server role in this (child) process; prints its port or URL as a JSON line. The proxy
 * and the relay forward to `target` (the local agent, or a pod in cluster mode).
 */
export async function serveRole(role: string, target: { host: string; port: number }): Promise<void> {
  const upstream = { ...target, token: process.env[TOKEN_ENV] ?? AGENT_TOKEN };
  const hostileIp = process.env[HOSTILE_ENV];
  const server =
    role === 'agent'
      ? await startLocalAgent()
      : role === 'gateway'
        ? await startLocalGateway(target.port, hostileIp ? { hostileIp } : {})
        : role === 'gateway-no-pod-check'
          ? await startLocalGateway(target.port, { podIdentityCheck: false })
          : await referenceByRole(role)?.start(upstream);
  if (!server) throw new Error(`unknown role ${role}`);
  const address = 'url' in server ? { url: server.url } : { port: server.port };
  process.stdout.write(`${JSON.stringify(address)}\n`);
  // The parent ends a child by closing its stdin (also when the parent dies).
  process.stdin.resume();
  process.stdin.on('end', () => void server.close().finally(() => process.exit(0)));
}

/**
 * Starts a server role in a child process (this same bundle) and reads what it printed; its own
 * process, so what it costs is an extra process on the path, as in a deployment.
 */
export async function spawnRole<T>(
  role: string,
  target: AgentTarget = localAgentTarget(0),
  opts: { hostileIp?: string } = {},
): Promise<Running & T & { pid: number }> {
  const env: NodeJS.ProcessEnv = { ...process.env, [TOKEN_ENV]: target.token };
  if (opts.hostileIp) env[HOSTILE_ENV] = opts.hostileIp;
  // BENCH_CPU_PROF_DIR=dir BENCH_CPU_PROF_ROLES=gateway,...: V8 CPU profiles of those roles (profiling).
  const profDir = process.env.BENCH_CPU_PROF_DIR;
  const profiled = profDir && (process.env.BENCH_CPU_PROF_ROLES ?? '').split(',').includes(role);
  const child = spawn(
    process.execPath,
    [
      ...(profiled ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`, `--cpu-prof-name=${role}.cpuprofile`] : []),
      process.argv[1]!,
      '--serve',
      role,
      '--agent-host',
      target.host,
      '--agent-port',
      String(target.port),
    ],
    { stdio: ['pipe', 'pipe', 'inherit'], env },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const line = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      const nl = out.indexOf('\n');
      if (nl >= 0) resolve(out.slice(0, nl));
    });
    child.once('exit', (code) => reject(new Error(`${role} exited (${code}) before it started`)));
  });
  return {
    ...(JSON.parse(line) as T),
    pid: child.pid!,
    close: async () => {
      child.stdin.end();
      await exited;
    },
  };
}

/** Starts agent, gateway and the references in this process, or each in its own (`split`). */
export async function localSetup(opts: { split?: boolean } = {}): Promise<LocalSetup> {
  const agent = opts.split ? await spawnRole<{ port: number }>('agent') : await startLocalAgent();
  const target = localAgentTarget(agent.port);
  const gateway = opts.split
    ? await spawnRole<{ url: string }>('gateway', target)
    : await startLocalGateway(agent.port);
  const noCheck = opts.split
    ? await spawnRole<{ url: string }>('gateway-no-pod-check', target)
    : await startLocalGateway(agent.port, { podIdentityCheck: false });
  const references = await Promise.all(
    REFERENCES.map((r) => (opts.split ? spawnRole<{ url: string }>(r.role, target) : r.start(target))),
  );
  return {
    agentUrl: { host: '127.0.0.1', port: agent.port, token: AGENT_TOKEN },
    gatewayUrl: gateway.url,
    gatewayNoCheckUrl: noCheck.url,
    references: Object.fromEntries(REFERENCES.map((r, i) => [r.role, references[i]!.url])),
    pids: Object.fromEntries(
      [
        ['gateway', gateway] as const,
        ['gateway-no-pod-check', noCheck] as const,
        ...REFERENCES.map((r, i) => [r.role, references[i]!] as const),
      ].flatMap(([role, server]): Array<[string, number]> =>
        'pid' in server && typeof server.pid === 'number' ? [[role, server.pid]] : [],
      ),
    ),
    apiKey: API_KEY,
    session: NAME,
    close: async () => {
      await Promise.all([gateway, noCheck, ...references].map((r) => r.close()));
      await agent.close();
    },
  };
}
