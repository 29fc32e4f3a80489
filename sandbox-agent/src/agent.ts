/**
 * startAgent: wires config, logger, workspace, shell and HTTP server, and listens. Used by main.ts
 * and by other packages' tests that need a real agent in-process.
 */
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';

import { EGRESS_TRUST_BUNDLE, SESSION_ENV_PREFIX } from '@sandbox-platform/api';

import { ArchiveLock } from './archive/archive-routes.js';
import { CODE_DEFAULTS, CodeContexts, type CodeOptions } from './code/contexts.js';
import type { AgentConfig } from './config.js';
import { startTrustBundle, type TrustBundle, type TrustBundleOptions } from './egress/trust-bundle.js';
import { MAX_TIMEOUT_SECONDS } from './exec/request.js';
import { FileStore } from './files/file-store.js';
import { LivenessCheck } from './http/liveness.js';
import { createAgentServer } from './http/server.js';
import { SessionStart } from './bind/session-start.js';
import { openWarmBind } from './bind/warm-up.js';
import { createLogger, errorMessage, type Logger, type LogSink } from './log.js';
import { WATCH_DEFAULTS, Watches, type WatchOptions } from './watch/watch-route.js';
import { ProcessTable } from './processes/process-table.js';
import { Terminals } from './pty/terminals.js';
import { PersistentShell } from './shell/persistent-shell.js';
import { StdinPipes } from './shell/stdin-pipe.js';
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
  /** Parent of the private directory of stdin pipes (default the OS temp directory, TMPDIR). */
  tempDir?: string;
  /** The code interpreter's tunables (docs/adr/0033; defaults: CODE_DEFAULTS, the image's paths). */
  code?: Partial<CodeOptions>;
  /** File watching's tunables (docs/adr/0033; defaults: WATCH_DEFAULTS, the image's helper). */
  watch?: Partial<WatchOptions>;
  /** The egress trust bundle's paths and poll, for tests (defaults: EGRESS_TRUST_BUNDLE, system CAs, 5 s). */
  egress?: Partial<Pick<TrustBundleOptions, 'bundleFile' | 'systemBundle' | 'intervalMs'>>;
}

/** How long open connections may take to finish after the shell stopped, before they are cut. */
const CONNECTION_DRAIN_MS = 1000;

/** Starts the agent; rejects when the workspace or bash is unusable or the port cannot be bound. */
export async function startAgent(config: AgentConfig, options: StartOptions = {}): Promise<RunningAgent> {
  const logger = createLogger(config.logLevel, options.logSink);
  const files = await FileStore.open(config.workspace);
  const env = shellEnvironment(options.baseEnv ?? process.env, files.workspace);
  // One record, shared by reference: every spawn reads it, and a warm Pod's bind extends it.
  const sessionEnv: Record<string, string> = { ...config.sessionEnv };
  const tempDir = options.tempDir ?? tmpdir();
  const stdinPipes = await StdinPipes.open(tempDir, env);
  const shell = new PersistentShell({
    bashPath: config.bashPath,
    workspace: files.workspace,
    env,
    sessionEnv,
    outputCapBytes: config.outputCapBytes,
    maxQueuedCommands: config.maxQueuedCommands,
    respawnRetryMs: options.shell?.respawnRetryMs,
    stdinPipes,
    logger,
  });
  const shared = {
    bashPath: config.bashPath,
    workspace: files.workspace,
    env,
    sessionEnv,
    logger,
  };
  const processes = new ProcessTable({
    ...shared,
    maxProcesses: config.maxProcesses,
    outputBytes: config.processOutputBytes,
  });
  const terminals = new Terminals({
    ...shared,
    helperPath: config.ptyHelperPath,
    maxTerminals: config.maxTerminals,
  });
  await terminals.start();
  const code = await CodeContexts.open({
    ...CODE_DEFAULTS,
    ...options.code,
    tempDir,
    workspace: files.workspace,
    env: () => ({ ...env, ...sessionEnv }),
    logger,
  });
  const watches = new Watches({ ...WATCH_DEFAULTS, ...options.watch, workspace: files.workspace }, logger);
  const liveness = livenessCheck(shell, files.workspace, options.liveness);
  // Readiness turns true only once the shell answers; a missing bash fails the start.
  await shell.start().catch(async (err: unknown) => {
    await stdinPipes.close();
    throw err;
  });
  const start = new SessionStart({ sessionEnv, shell, processes, logger });
  // A warm Pod's agent: no token until its one bind, which also starts the session: its env and
  // startup command (docs/adr/0016-warm-pools.md). A Pod created for its session starts it below.
  const bind =
    config.bind && (await openWarmBind(config.bind, { logger, start, runner: shell, limits: config }));
  const server = createAgentServer({
    token: config.token,
    bind,
    runner: shell,
    healthy: () => shell.alive,
    liveness,
    files,
    processes,
    terminals,
    code,
    // A digest before a suspension stops what could still write to the workspace (docs/snapshots.md).
    archive: new ArchiveLock(async () => {
      await Promise.all([terminals.close(), processes.close(), code.close()]);
      // What ran is stopped; the agent keeps serving: the suspension may be cancelled (a resume
      // before the Pod goes keeps it), and then new commands must start (E2B pause then connect).
      terminals.reopen();
      processes.reopen();
    }),
    watches,
    limits: config,
    timeouts: config,
    logger,
  });
  let trustBundle: TrustBundle | undefined;
  const stopOthers = async (): Promise<void> => {
    trustBundle?.close();
    watches.close();
    await Promise.all([terminals.close(), processes.close(), code.close()]);
    await stdinPipes.close().catch((err: unknown) => {
      logger.warn('cannot remove the stdin pipe directory', { error: errorMessage(err) });
    });
  };
  try {
    // Before listening: the Pod's SSL_CERT_FILE and friends name the bundle, so it must exist once
    // the agent is ready.
    trustBundle = openTrustBundle(config, options.egress, logger);
  } catch (err) {
    await shell.close(0);
    await stopOthers();
    throw err;
  }
  try {
    server.listen(config.port, config.host);
    await once(server, 'listening');
  } catch (err) {
    await shell.close(0);
    await stopOthers();
    throw new Error(`cannot listen on ${config.host}:${config.port}`, { cause: err });
  }
  const { port } = server.address() as AddressInfo;
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
  logger.info('agent listening', { host: config.host, port, workspace: files.workspace });
  if (!config.bind) void start.startup(config.startupCommand);
  return {
    port,
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    close: async (graceMs = config.shutdownGraceMs) => {
      logger.info('agent stopping', { graceMs, queued: shell.queueLength });
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      await Promise.all([shell.close(graceMs), stopOthers()]);
      if (!(await settlesWithin(closed, CONNECTION_DRAIN_MS))) server.closeAllConnections();
      await closed;
      logger.info('agent stopped');
    },
  };
}

/**
 * The egress trust bundle when the Pod names an interception CA (docs/egress.md); throws when it
 * cannot be written.
 */
function openTrustBundle(
  config: AgentConfig,
  tuning: StartOptions['egress'],
  logger: Logger,
): TrustBundle | undefined {
  if (config.egressCaFile === undefined) return undefined;
  return startTrustBundle({
    ...tuning,
    bundleFile: tuning?.bundleFile ?? EGRESS_TRUST_BUNDLE,
    caFile: config.egressCaFile,
    logger,
  });
}

/** The /livez check: the queue may stall for the longest command plus its recovery. */
function livenessCheck(
  shell: PersistentShell,
  workspace: string,
  tuning: StartOptions['liveness'] = {},
): LivenessCheck {
  return new LivenessCheck({
    queue: shell,
    // The longest command allowed, then the time to stop it and restart bash.
    stallLimitMs: tuning.stallLimitMs ?? MAX_TIMEOUT_SECONDS * 1000 + shell.recoveryBudgetMs,
    ioProbePath: workspace,
    ioTimeoutMs: tuning.ioTimeoutMs,
    ioProbe: tuning.ioProbe,
  });
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
