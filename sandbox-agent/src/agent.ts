/**
 * startAgent: wires config, logger, workspace, shell and HTTP server, and listens. Used by main.ts
 * and by other packages' tests that need a real agent in-process.
 */
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';

import { SESSION_ENV_PREFIX } from '@sandbox-platform/api';

import type { AgentConfig } from './config.js';
import { MAX_TIMEOUT_SECONDS } from './exec/request.js';
import { FileStore } from './files/file-store.js';
import { LivenessCheck } from './http/liveness.js';
import { createAgentServer } from './http/server.js';
import { createLogger, type LogSink } from './log.js';
import { PersistentShell } from './shell/persistent-shell.js';
import { settlesWithin } from './shell/timing.js';

/** A started agent. */
export interface RunningAgent {
  /** The bound port (useful with port 0). */
  port: number;
  /** Base URL on the bound address, e.g. http://127.0.0.1:8090. */
  url: string;
  /**
   * Graceful stop: stop accepting, let the running command finish for up to `graceMs` (default
   * the configured shutdown grace), kill what is left, close connections.
   */
  close(graceMs?: number): Promise<void>;
}

/** Extra wiring for embedders; production uses the defaults. */
export interface StartOptions {
  /** Where log lines go (default stdout). */
  logSink?: LogSink;
  /** Environment the shell starts from (default process.env); agent secrets are removed either way. */
  baseEnv?: NodeJS.ProcessEnv;
  /** Tuning of the liveness check for tests; production derives the limit from the deadlines. */
  liveness?: { stallLimitMs?: number; ioTimeoutMs?: number; ioProbe?: () => Promise<unknown> };
  /** Shell timings for tests (restart retry pause). */
  shell?: { respawnRetryMs?: number };
}

/** How long open connections may take to finish after the shell stopped, before they are cut. */
const CONNECTION_DRAIN_MS = 1000;

/** Starts the agent; rejects when the workspace or bash is unusable or the port cannot be bound. */
export async function startAgent(config: AgentConfig, options: StartOptions = {}): Promise<RunningAgent> {
  const logger = createLogger(config.logLevel, options.logSink);
  const files = await FileStore.open(config.workspace);
  const shell = new PersistentShell({
    bashPath: config.bashPath,
    workspace: files.workspace,
    env: shellEnvironment(options.baseEnv ?? process.env, files.workspace),
    sessionEnv: config.sessionEnv,
    outputCapBytes: config.outputCapBytes,
    maxQueuedCommands: config.maxQueuedCommands,
    respawnRetryMs: options.shell?.respawnRetryMs,
    logger,
  });
  const liveness = new LivenessCheck({
    queue: shell,
    // The longest command allowed, then the time to stop it and restart bash.
    stallLimitMs: options.liveness?.stallLimitMs ?? MAX_TIMEOUT_SECONDS * 1000 + shell.recoveryBudgetMs,
    ioProbePath: files.workspace,
    ioTimeoutMs: options.liveness?.ioTimeoutMs,
    ioProbe: options.liveness?.ioProbe,
  });
  // Readiness turns true only once the shell answers; a missing bash fails the start.
  await shell.start();
  const server = createAgentServer({
    token: config.token,
    runner: shell,
    healthy: () => shell.alive,
    liveness,
    files,
    limits: config,
    timeouts: config,
    logger,
  });
  try {
    server.listen(config.port, config.host);
    await once(server, 'listening');
  } catch (err) {
    await shell.close(0);
    throw new Error(`cannot listen on ${config.host}:${config.port}`, { cause: err });
  }
  const { port } = server.address() as AddressInfo;
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
  logger.info('agent listening', { host: config.host, port, workspace: files.workspace });
  return {
    port,
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    close: async (graceMs = config.shutdownGraceMs) => {
      logger.info('agent stopping', { graceMs, queued: shell.queueLength });
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      await shell.close(graceMs);
      if (!(await settlesWithin(closed, CONNECTION_DRAIN_MS))) server.closeAllConnections();
      await closed;
      logger.info('agent stopped');
    },
  };
}

/** Variables of the agent's own configuration; commands never see them (the token above all). */
const AGENT_ONLY = /^SANDBOX_(TOKEN|TOKEN_FILE|AGENT_.*)$/;

/**
 * The shell's environment: the base environment minus the agent's secrets and settings and the
 * session env carriers (the shell gets those from config.sessionEnv, exported after its start).
 */
export function shellEnvironment(base: NodeJS.ProcessEnv, workspace: string): NodeJS.ProcessEnv {
  const env = Object.fromEntries(
    Object.entries(base).filter(([name]) => !AGENT_ONLY.test(name) && !name.startsWith(SESSION_ENV_PREFIX)),
  );
  delete env.OLDPWD;
  return { ...env, PWD: workspace };
}
