/**
 * The E2B-compatible API (issue 28; docs/e2b.md, ADR 0035): the official e2b SDKs, pointed at
 * the gateway with E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY, run unchanged. Two plugins:
 * the credential bridge (registered just before the gateway's authentication) and the API itself
 * (the control API under /e2b, envd under /e2b/envd), registered after the services it calls.
 */
import type * as k8s from '@kubernetes/client-node';
import { WORKSPACE_DIR } from '@sandbox-platform/api';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

import type { KeyAuthenticator } from '../auth/keys.js';
import { AccessTokens } from './access-token.js';
import authBridge, { E2B_API_PREFIX, E2B_ENVD_PREFIX } from './auth-bridge.js';
import { E2bKube, type SessionPatcher } from './control/kube.js';
import controlRoutes from './control/routes.js';
import { E2bSandboxes } from './control/sandboxes.js';
import type { PoolLookup } from './control/templates.js';
import { EnvdFilesystem } from './envd/filesystem-service.js';
import envdPlugin from './envd/plugin.js';
import { EnvdProcesses } from './envd/process-service.js';
import { EnvdWatchers } from './envd/watcher.js';
import { E2bKeyAuthenticator } from './keys.js';
import type {} from '../plugins/services.js';

export { E2B_API_PREFIX, E2B_ENVD_PREFIX };

/** What the E2B API needs beyond the app's own decorations (compose.ts builds it). */
export interface E2bDeps {
  tokens: AccessTokens;
  /** The gateway's key authenticator, extended (keys.ts); the auth plugin must use this one. */
  keys: E2bKeyAuthenticator;
  pools: PoolLookup;
  patcher: SessionPatcher;
  /** GATEWAY_E2B_PERSISTENT_WORKSPACE. */
  persistentWorkspace: boolean;
  /**
   * The workspace's path in the sandboxes (default /workspace, the operator's mount). Only tests
   * change it: their agents run in a temporary directory.
   */
  workspace?: string;
  /** The PTY helper's path in the sandboxes (default the agent image's). Only tests change it. */
  ptyHelper?: string;
  /** Where sandboxes keep the login environment (default launcher.ts LOGIN_ENV_FILE). Only tests change it. */
  loginEnvFile?: string;
}

/** Builds the E2B dependencies from the master key, the key set and the REST KubeConfig. */
export function createE2bDeps(inputs: {
  masterKey: Buffer;
  keys: KeyAuthenticator;
  kubeConfig: k8s.KubeConfig;
  kubeApiTimeoutMs: number;
  persistentWorkspace: boolean;
}): E2bDeps {
  const kube = new E2bKube(inputs.kubeConfig, inputs.kubeApiTimeoutMs);
  return {
    tokens: new AccessTokens(inputs.masterKey),
    keys: new E2bKeyAuthenticator(inputs.keys),
    pools: kube,
    patcher: kube,
    persistentWorkspace: inputs.persistentWorkspace,
  };
}

/** The credential bridge: register right before plugins/auth.ts. */
export const e2bBridgePlugin = fp<E2bDeps>(
  async (app: FastifyInstance, deps: E2bDeps) => {
    await app.register(authBridge, {
      store: app.store,
      tokens: deps.tokens,
      keys: deps.keys,
      namespaces: app.config.namespaces,
    });
  },
  { name: 'e2b-bridge', fastify: '5.x', dependencies: ['services'] },
);

/** The control and envd APIs: register after the services and the interactive plugin. */
export async function e2bPlugin(app: FastifyInstance, deps: E2bDeps): Promise<void> {
  const sandboxes = new E2bSandboxes({
    sessions: app.sessions,
    store: app.store,
    tokens: deps.tokens,
    pools: deps.pools,
    patcher: deps.patcher,
    policy: app.config.policy,
    persistentWorkspace: deps.persistentWorkspace,
    maxWaitMs: app.config.exec.maxWaitSeconds * 1000,
  });
  const workspace = deps.workspace ?? WORKSPACE_DIR;
  const common = { processes: app.processes, execs: app.execs, log: app.log };
  const processes = new EnvdProcesses({
    ...common,
    ...(deps.ptyHelper ? { ptyHelper: deps.ptyHelper } : {}),
    ...(deps.loginEnvFile ? { loginEnvFile: deps.loginEnvFile } : {}),
  });
  const watchers = new EnvdWatchers({ ...common, fileWatches: app.fileWatches, workspace });
  const filesystem = new EnvdFilesystem({ execs: app.execs, watchers, workspace });
  await app.register(controlRoutes, { prefix: E2B_API_PREFIX, sandboxes });
  const readMaxBytes = app.config.maxBodyBytes;
  await app.register(envdPlugin, { prefix: E2B_ENVD_PREFIX, processes, filesystem, readMaxBytes, workspace });
}
