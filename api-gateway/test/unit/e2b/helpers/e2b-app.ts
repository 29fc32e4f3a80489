/**
 * The gateway with the E2B API in front of real sandbox agents (sandbox-agent/src, in-process),
 * for tests with the official e2b SDK. The session store is a fake that also plays the operator:
 * a session without a status gets a real agent (its token derived from the master key and the
 * session's uid) on a fresh loopback address and is put Ready; a suspended one loses its agent
 * (Ready=False/Suspended) and gets a new one when resumed; a deleted one loses its agent. All
 * agents share one workspace directory, which the E2B API is told is the sandboxes' workspace.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { deriveToken, type SandboxSession } from '@sandbox-platform/api';
import type { FastifyInstance } from 'fastify';

import { agentConfig, startAgent, type RunningAgent } from '../../../../../sandbox-agent/src/index.js';
import { buildApp } from '../../../../src/app.js';
import { loadConfig } from '../../../../src/config.js';
import { AccessTokens } from '../../../../src/e2b/access-token.js';
import type { E2bDeps } from '../../../../src/e2b/index.js';
import type { LifecycleFields } from '../../../../src/e2b/control/lifecycle.js';
import { E2bKeyAuthenticator } from '../../../../src/e2b/keys.js';
import { AgentInteractive } from '../../../../src/exec/agent/agent-interactive.js';
import { AgentTransport } from '../../../../src/exec/agent/agent-transport.js';
import { WinstonFastifyLogger, silentWinston } from '../../../../src/logger.js';
import { dialLookup } from '../../../../src/sessions/pod-identity.js';
import { FakeActivity, TEST_ENV, testKeys } from '../../../helpers/app.js';
import { FakeStore } from '../../../helpers/fake-store.js';
import { FakeTransport } from '../../../helpers/fake-transport.js';
import { ready } from '../../../helpers/sessions.js';

const here = dirname(fileURLToPath(import.meta.url));
const WATCH_SOURCE = join(here, '../../../../../test-e2e/images/src/sandbox-watch.c');

/** The master key of these tests. */
export const MASTER_KEY = Buffer.alloc(32, 7);

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function isReady(s: SandboxSession): boolean {
  return s.status?.conditions?.some((c) => c.reason === 'SandboxReady') === true;
}

function suspendedStatus(s: SandboxSession): SandboxSession {
  const next = structuredClone(s);
  const lastTransitionTime = new Date().toISOString();
  next.status = {
    conditions: [
      { type: 'Ready', status: 'False', reason: 'Suspended', message: 'suspended', lastTransitionTime },
    ],
  };
  return next;
}

/** A fake store that plays the operator with real agents (see the module comment). */
export class OperatingStore extends FakeStore {
  readonly agents = new Map<string, { agent: RunningAgent; ip: string }>();
  /** Pools that exist, as `namespace/name`. */
  readonly pools = new Set<string>();
  private nextHost = 20;
  private pending = new Set<string>();
  private starting = new Set<string>();
  private closed = false;

  constructor(
    private readonly port: number,
    private readonly workspace: string,
    private readonly helpers: { pty?: string; watch: string },
  ) {
    super();
  }

  override put(s: SandboxSession): void {
    const key = `${s.metadata.namespace}/${s.metadata.name}`;
    // A suspended session's Pod is going away at once: never dialable again (the Pod identity
    // check sees it deleting), whatever its status said a moment ago.
    super.put(s.spec.suspend === true && isReady(s) ? suspendedStatus(s) : s);
    if (!this.pending.has(key)) {
      this.pending.add(key);
      setImmediate(() => void this.react(key));
    }
  }

  override remove(namespace: string, name: string, reason?: string): void {
    super.remove(namespace, name, reason);
    void this.stopAgent(`${namespace}/${name}`);
  }

  /** Lifecycle patches, as the API server applies a merge patch. */
  patch(
    namespace: string,
    name: string,
    spec: Partial<SandboxSession['spec']>,
    annotations: Record<string, string> = {},
  ): SandboxSession | undefined {
    const s = this.get(namespace, name);
    if (!s) return undefined;
    const next = structuredClone(s);
    Object.assign(next.spec, spec);
    next.metadata.annotations = { ...next.metadata.annotations, ...annotations };
    this.put(next);
    return structuredClone(next);
  }

  private async react(key: string): Promise<void> {
    this.pending.delete(key);
    const s = this.sessions.get(key);
    if (!s || this.closed) return;
    if (s.spec.suspend === true) await this.stopAgent(key);
    else if (!isReady(s) && !this.agents.has(key) && !this.starting.has(key)) {
      this.starting.add(key);
      await this.startFor(s).finally(() => this.starting.delete(key));
    }
  }

  private async startFor(s: SandboxSession): Promise<void> {
    const key = `${s.metadata.namespace}/${s.metadata.name}`;
    const ip = `127.0.0.${this.nextHost++}`;
    const token = deriveToken(MASTER_KEY, {
      namespace: s.metadata.namespace!,
      name: s.metadata.name!,
      uid: s.metadata.uid!,
    });
    const agent = await startAgent(
      agentConfig({
        token,
        host: ip,
        port: this.port,
        workspace: this.workspace,
        logLevel: 'error',
        ...(this.helpers.pty ? { ptyHelperPath: this.helpers.pty } : {}),
      }),
      {
        logSink: () => undefined,
        baseEnv: { ...process.env, HOME: this.workspace },
        watch: { helperPath: this.helpers.watch },
      },
    );
    this.agents.set(key, { agent, ip });
    const current = this.sessions.get(key);
    if (!current || this.closed) return void (await agent.close(0));
    const next = structuredClone(current);
    ready(ip)(next);
    // put, not super.put: when it was suspended meanwhile, the next reaction stops this agent.
    this.put(next);
  }

  private async stopAgent(key: string): Promise<void> {
    const a = this.agents.get(key);
    this.agents.delete(key);
    if (a) await a.agent.close(0);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const key of [...this.agents.keys()]) await this.stopAgent(key);
  }
}

/** The app, its store and what to clean up. */
export interface E2bApp {
  app: FastifyInstance;
  url: string;
  store: OperatingStore;
  workspace: string;
  tokens: AccessTokens;
  /** SDK options of a key: its API key and the two E2B URLs of this gateway. */
  opts(apiKey: string): { apiKey: string; apiUrl: string; sandboxUrl: string; requestTimeoutMs: number };
  close(): Promise<void>;
}

/** Starts the app (listening on a loopback port). */
export async function startE2bApp(
  opts: { env?: Record<string, string>; ptyHelper?: string } = {},
): Promise<E2bApp> {
  const workspace = await mkdtemp(join(tmpdir(), 'gw-e2b-'));
  const port = await freePort();
  // The agent's inotify helper (its file watching), compiled as the image build does.
  const watch = join(workspace, '.sandbox-watch');
  await promisify(execFile)('gcc', ['-O1', '-Wall', '-o', watch, WATCH_SOURCE]);
  const store = new OperatingStore(port, workspace, {
    watch,
    ...(opts.ptyHelper ? { pty: opts.ptyHelper } : {}),
  });
  const config = loadConfig({
    ...TEST_ENV,
    GATEWAY_ALLOW_LOOPBACK_POD_IPS: 'true',
    GATEWAY_MAX_WAIT_SECONDS: '20',
    GATEWAY_DEFAULT_WAIT_SECONDS: '20',
    ...opts.env,
  });
  const transport = new AgentTransport({
    masterKey: MASTER_KEY,
    lookup: dialLookup(store, { address: config.addressPolicy, podIdentityCheck: config.podIdentityCheck }),
    port,
    connectTimeoutMs: 1000,
    connectRetries: 1,
    deadlineMarginMs: 2000,
    maxOutputBytes: config.exec.maxOutputBytes,
    fileTimeoutMs: 10_000,
  });
  const keys = await testKeys();
  const tokens = new AccessTokens(MASTER_KEY);
  const e2b: E2bDeps = {
    tokens,
    keys: new E2bKeyAuthenticator(keys),
    pools: { poolExists: (ns, name) => Promise.resolve(store.pools.has(`${ns}/${name}`)) },
    patcher: {
      setLifecycle: (ns, name, f: LifecycleFields) => Promise.resolve(store.patch(ns, name, f)),
      annotate: (ns, name, a) => Promise.resolve(store.patch(ns, name, {}, a)),
    },
    persistentWorkspace: true,
    workspace,
    // Not the sandboxes' /tmp path: agents of other test runs on this host share /tmp.
    loginEnvFile: join(workspace, '.e2b-login-env'),
    ...(opts.ptyHelper ? { ptyHelper: opts.ptyHelper } : {}),
  };
  const app = await buildApp({
    config,
    logger: new WinstonFastifyLogger(silentWinston()),
    keys,
    store,
    transports: { Agent: transport, KubernetesExec: new FakeTransport() },
    activity: new FakeActivity(),
    interactive: new AgentInteractive(transport),
    e2b,
  });
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  return {
    app,
    url,
    store,
    workspace,
    tokens,
    opts: (apiKey) => ({
      apiKey,
      apiUrl: `${url}/e2b`,
      sandboxUrl: `${url}/e2b/envd`,
      requestTimeoutMs: 20_000,
    }),
    close: async () => {
      await app.close();
      await store.close();
      transport.close();
      await rm(workspace, { recursive: true, force: true });
    },
  };
}
