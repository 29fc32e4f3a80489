/**
 * The gateway in front of a real sandbox agent started in-process (sandbox-agent/src, the same
 * code as the Pod's): a real AgentTransport and AgentInteractive, the session store a fake whose
 * Ready session points at 127.0.0.1, the agent's token derived from the master key and the
 * session's uid as the operator would. The transport's address lookup is the production one
 * (sessions/pod-identity.ts dialLookup), on the fake store's Pods. For the interactive routes
 * (processes, terminal, ports).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { afterAll } from '@jest/globals';
import { deriveToken } from '@sandbox-platform/api';
import type { FastifyInstance } from 'fastify';

import {
  agentConfig,
  startAgent,
  type RunningAgent,
  type StartOptions,
} from '../../../sandbox-agent/src/index.js';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { AgentInteractive } from '../../src/exec/agent/agent-interactive.js';
import { AgentTransport } from '../../src/exec/agent/agent-transport.js';
import { WinstonFastifyLogger, silentWinston } from '../../src/logger.js';
import { dialLookup } from '../../src/sessions/pod-identity.js';
import type { GatewayTracing } from '../../src/tracing/tracing.js';
import { FakeActivity, TEST_ENV, testKeys } from './app.js';
import { FakeStore } from './fake-store.js';
import { FakeTransport } from './fake-transport.js';
import { ready, session } from './sessions.js';

const here = dirname(fileURLToPath(import.meta.url));
const MASTER_KEY = Buffer.alloc(32, 9);

let ptyHelper: Promise<string> | undefined;

// Registered in every test file that imports this module; removes what buildPtyHelper made.
afterAll(async () => {
  if (ptyHelper) await rm(dirname(await ptyHelper), { recursive: true, force: true });
});

/**
 * The image's terminal helper compiled with the host's gcc (as the agent's own tests do), once per
 * test file; its directory is removed after the file's tests (the hook below).
 */
export function buildPtyHelper(): Promise<string> {
  ptyHelper ??= (async () => {
    const source = join(here, '../../../test-e2e/images/src/sandbox-pty.c');
    const out = join(await mkdtemp(join(tmpdir(), 'gw-pty-')), 'sandbox-pty');
    await promisify(execFile)('gcc', ['-O1', '-Wall', '-o', out, source]);
    return out;
  })();
  return ptyHelper;
}

/** The app, its real agent and what to clean up. */
export interface AgentApp {
  app: FastifyInstance;
  url: string;
  agent: RunningAgent;
  store: FakeStore;
  activity: FakeActivity;
  workspace: string;
  close(): Promise<void>;
}

/**
 * Starts an agent for session `demo` in team-a (and `other` in team-b, same agent, so tenant
 * checks are about the gateway, not the agent) and a listening gateway in front of it.
 */
export async function startAgentApp(
  opts: {
    env?: Record<string, string>;
    ptyHelperPath?: string;
    tracing?: GatewayTracing;
    /** The agent's code interpreter options (its Python, the bridge script). */
    code?: StartOptions['code'];
    /** The agent's file watching options (its inotify helper). */
    watch?: StartOptions['watch'];
  } = {},
): Promise<AgentApp> {
  const workspace = await mkdtemp(join(tmpdir(), 'gw-agent-'));
  const token = deriveToken(MASTER_KEY, { namespace: 'team-a', name: 'demo', uid: 'uid-demo' });
  const agent = await startAgent(
    agentConfig({
      token,
      host: '127.0.0.1',
      port: 0,
      workspace,
      logLevel: 'error',
      ...(opts.ptyHelperPath ? { ptyHelperPath: opts.ptyHelperPath } : {}),
    }),
    // HOME is the workspace, as in a sandbox Pod (never the developer's ~/.bashrc in a terminal).
    {
      logSink: () => undefined,
      baseEnv: { ...process.env, HOME: workspace },
      ...(opts.code ? { code: opts.code } : {}),
      ...(opts.watch ? { watch: opts.watch } : {}),
    },
  );
  const config = loadConfig({ ...TEST_ENV, GATEWAY_ALLOW_LOOPBACK_POD_IPS: 'true', ...opts.env });
  const store = new FakeStore();
  store.put(session('demo', 'team-a', ready('127.0.0.1')));
  store.put(session('other', 'team-b', ready('127.0.0.1')));
  const dialPolicy = { address: config.addressPolicy, podIdentityCheck: config.podIdentityCheck };
  const transport = new AgentTransport({
    masterKey: MASTER_KEY,
    lookup: dialLookup(store, dialPolicy),
    port: agent.port,
    connectTimeoutMs: 1000,
    connectRetries: 1,
    deadlineMarginMs: 2000,
    maxOutputBytes: config.exec.maxOutputBytes,
    fileTimeoutMs: 10_000,
    ...(opts.tracing ? { tracing: opts.tracing.agent } : {}),
  });
  const activity = new FakeActivity();
  const app = await buildApp({
    config,
    logger: new WinstonFastifyLogger(silentWinston()),
    keys: await testKeys(),
    store,
    transports: { Agent: transport, KubernetesExec: new FakeTransport() },
    activity,
    interactive: new AgentInteractive(transport),
    ...(opts.tracing ? { tracingPlugin: opts.tracing.fastifyPlugin } : {}),
  });
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  return {
    app,
    url,
    agent,
    store,
    activity,
    workspace,
    close: async () => {
      await app.close();
      await agent.close(0);
      await rm(workspace, { recursive: true, force: true });
    },
  };
}
