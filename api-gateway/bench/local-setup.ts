/**
 * Local mode: the gateway and a real agent in this process, no Kubernetes. The session store is a
 * static one-session store pointing at the agent on 127.0.0.1; everything else (auth, schema
 * validation, readiness, token derivation, keep-alive pool, activity throttling, info logging to
 * /dev/null) is the real code.
 * It measures the gateway's own overhead; KubernetesExec cannot be measured here.
 */
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';

import { deriveToken, type SandboxSession } from '@sandbox-platform/api';

import { agentConfig, startAgent } from '../../sandbox-agent/src/index.js';
import { ThrottledActivityReporter } from '../src/activity/reporter.js';
import { buildApp } from '../src/app.js';
import { ApiKeys } from '../src/auth/keys.js';
import { loadConfig } from '../src/config.js';
import { AgentTransport } from '../src/exec/agent-transport.js';
import { WinstonFastifyLogger, createWinston } from '../src/logger.js';
import type { CreateResult, SessionStore, Tombstone } from '../src/sessions/store.js';

const NAMESPACE = 'bench';
const NAME = 'bench';
const UID = 'bench-uid';
const API_KEY = 'bench-api-key-0123456789abcdef';
const MASTER_KEY = Buffer.alloc(32, 1);

/** A store holding one Ready session; writes are not part of the benchmark. */
class StaticStore implements SessionStore {
  constructor(private readonly session: SandboxSession) {}
  synced(): boolean {
    return true;
  }
  get(namespace: string, name: string): SandboxSession | undefined {
    return namespace === NAMESPACE && name === NAME ? this.session : undefined;
  }
  list(namespace: string): SandboxSession[] {
    return namespace === NAMESPACE ? [this.session] : [];
  }
  tombstone(): Tombstone | undefined {
    return undefined;
  }
  waitForChange(): Promise<void> {
    return Promise.resolve();
  }
  createOrGet(): Promise<CreateResult> {
    return Promise.reject(new Error('not in the benchmark'));
  }
  delete(): Promise<boolean> {
    return Promise.reject(new Error('not in the benchmark'));
  }
}

/** What the local mode measures against. */
export interface LocalSetup {
  agentUrl: { host: string; port: number; token: string };
  gatewayUrl: string;
  apiKey: string;
  session: string;
  close(): Promise<void>;
}

export async function localSetup(): Promise<LocalSetup> {
  const dir = mkdtempSync(join(tmpdir(), 'gw-bench-'));
  const token = deriveToken(MASTER_KEY, { namespace: NAMESPACE, name: NAME, uid: UID });
  const agent = await startAgent(
    agentConfig({ token, host: '127.0.0.1', port: 0, workspace: dir, logLevel: 'error' }),
    {
      logSink: () => undefined,
    },
  );
  const config = loadConfig({
    GATEWAY_API_KEYS_FILE: '/unused',
    SANDBOX_MASTER_KEY_FILE: '/unused',
    GATEWAY_NAMESPACES: NAMESPACE,
    GATEWAY_AGENT_PORT: String(agent.port),
    GATEWAY_ALLOW_LOOPBACK_POD_IPS: 'true',
  });
  const session: SandboxSession = {
    metadata: { name: NAME, namespace: NAMESPACE, uid: UID },
    spec: { idleTimeoutSeconds: 1800 },
    status: {
      podIP: '127.0.0.1',
      podName: 'sbs-bench',
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          reason: 'SandboxReady',
          message: '',
          lastTransitionTime: new Date().toISOString(),
        },
      ],
    },
  };
  // The production logger at its default level (info), writing its JSON lines synchronously (as
  // stdout to a pipe does) to /dev/null: the per-exec log line is part of what a call costs.
  const devNull = openSync('/dev/null', 'w');
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb): void {
      writeSync(devNull, chunk);
      cb();
    },
  });
  const logger = new WinstonFastifyLogger(createWinston('info', sink));
  const transport = new AgentTransport({
    masterKey: MASTER_KEY,
    port: agent.port,
    connectTimeoutMs: config.exec.connectTimeoutMs,
    connectRetries: config.exec.connectRetries,
    deadlineMarginMs: config.exec.deadlineMarginMs,
    maxResponseBytes: 16 << 20,
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
    keys: ApiKeys.parse(JSON.stringify({ keys: [{ id: 'bench', key: API_KEY, namespaces: [NAMESPACE] }] }), [
      NAMESPACE,
    ]),
    store: new StaticStore(session),
    transports: { Agent: transport, KubernetesExec: transport },
    activity,
  });
  const gatewayUrl = await app.listen({ port: 0, host: '127.0.0.1' });
  return {
    agentUrl: { host: '127.0.0.1', port: agent.port, token },
    gatewayUrl,
    apiKey: API_KEY,
    session: NAME,
    close: async () => {
      await app.close();
      await agent.close(0);
      closeSync(devNull);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
