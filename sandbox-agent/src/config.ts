/**
 * Agent configuration: typed, validated once at boot, failing fast with every problem listed.
 * Only main.ts reads the environment (loadConfig); tests and other packages build a config with
 * agentConfig() and the same validation.
 */
import { existsSync, readFileSync } from 'node:fs';
import { isAbsolute } from 'node:path';

import {
  AGENT_PORT,
  EGRESS_CA_ENV,
  SESSION_ENV_PREFIX,
  STARTUP_COMMAND_ENV,
  TOKEN_ENV,
  TOKEN_FILE,
  WORKSPACE_DIR,
} from '@sandbox-platform/api';

import { bindConfigFrom, bindConfigProblems, type BindConfig } from './bind/bind-config.js';
import { LOG_LEVELS, type LogLevel } from './log.js';
import { ENV_NAME } from './shell/wrapper.js';

const MIB = 1024 * 1024;

/** Longest startup command (spec.startup.command's maxLength). */
export const MAX_STARTUP_COMMAND_LENGTH = 16384;

/** Shortest accepted token: derived tokens are 64 hex characters; anything this short is a mistake. */
export const MIN_TOKEN_LENGTH = 16;

/** Everything the agent needs; see {@link ENV} for the environment variable behind each key. */
export interface AgentConfig {
  /** TCP port to listen on (0 = ephemeral, for tests). Default 8090, the pod's agent port. */
  port: number;
  /** Address to bind. Default 0.0.0.0: the gateway reaches the agent on the pod IP. */
  host: string;
  /**
   * Bearer token every call but /healthz must present. Never logged. Empty for a warm Pod's agent
   * (`bind` set), which accepts the token of its one bind instead.
   */
  token: string;
  /** Set for the agent of a warm pool Pod: it starts unbound (docs/adr/0016-warm-pools.md). */
  bind?: BindConfig;
  /** Root of every file path and the shell's starting directory. Default /workspace. */
  workspace: string;
  /** Bytes kept per output stream (stdout, stderr) of one command; the rest is drained and dropped. */
  outputCapBytes: number;
  /** Largest file PUT accepts (413 beyond). */
  fileMaxBytes: number;
  /** Largest exec request body (413 beyond); the command text lives in it. */
  execBodyMaxBytes: number;
  /** On shutdown, how long the running command may still run before its processes are killed. */
  shutdownGraceMs: number;
  /** Time allowed to receive a whole request (headers and body); generous for large uploads. */
  requestTimeoutMs: number;
  /** Time allowed to receive request headers (slowloris guard). */
  headersTimeoutMs: number;
  /** Idle keep-alive lifetime; above the gateway's pool idle timeout so the pool closes first. */
  keepAliveTimeoutMs: number;
  /** The bash binary (PATH lookup unless absolute). */
  bashPath: string;
  /** Minimum log level. */
  logLevel: LogLevel;
  /**
   * The session's env (spec.env), exported in the user's bash only; never part of the agent's own
   * environment. From the `SANDBOX_ENV_<name>` variables (see {@link ENV}.sessionEnvPrefix).
   */
  sessionEnv: Readonly<Record<string, string>>;
  /**
   * spec.startup.command of the session a Pod was created for: started as a background process
   * once the agent listens (docs/adr/0016). A warm Pod's agent gets it in its bind instead.
   */
  startupCommand?: string;
  /** Most exec calls waiting for the shell; more are answered 503 (each holds its request body). */
  maxQueuedCommands: number;
  /**
   * Most open connections; further ones are closed at once. The sandbox's own processes can
   * reach the agent on loopback, and each connection costs memory and a file descriptor.
   */
  maxConnections: number;
  /**
   * Most decoded stdin bytes one JSON exec request may carry (413 beyond); calls waiting for the
   * shell hold at most 8 times this together (503 beyond). Streamed stdin (NDJSON) has no total.
   */
  stdinMaxBytes: number;
  /** Most background processes held, running or exited and not removed (409 beyond). */
  maxProcesses: number;
  /** Ring buffer per output stream per background process; older bytes are dropped (and counted). */
  processOutputBytes: number;
  /** Most terminals (GET /v1/pty) open at a time (409 beyond). */
  maxTerminals: number;
  /** The static sandbox-pty helper; when it is missing, /v1/pty answers 503 and the rest works. */
  ptyHelperPath: string;
  /**
   * The egress proxy's interception CA (an absolute path; it may appear and change later): when
   * set, the agent keeps EGRESS_TRUST_BUNDLE current from it (docs/egress.md). Unset: no bundle.
   */
  egressCaFile?: string;
}

/** Defaults of every key but the token, which has none. */
export const DEFAULT_CONFIG: Omit<AgentConfig, 'token'> = {
  port: AGENT_PORT,
  host: '0.0.0.0',
  workspace: WORKSPACE_DIR,
  outputCapBytes: MIB,
  fileMaxBytes: 32 * MIB,
  execBodyMaxBytes: MIB,
  shutdownGraceMs: 20_000,
  requestTimeoutMs: 120_000,
  headersTimeoutMs: 10_000,
  keepAliveTimeoutMs: 65_000,
  bashPath: 'bash',
  logLevel: 'info',
  sessionEnv: {},
  maxQueuedCommands: 64,
  maxConnections: 256,
  stdinMaxBytes: MIB,
  maxProcesses: 16,
  processOutputBytes: MIB,
  maxTerminals: 4,
  ptyHelperPath: '/opt/sandbox-agent/sandbox-pty',
};

/** Environment variables read by {@link loadConfig}. */
export const ENV = {
  /** Listen port (default 8090). */
  port: 'SANDBOX_AGENT_PORT',
  /** Bind address (default 0.0.0.0). */
  host: 'SANDBOX_AGENT_HOST',
  /** File holding the token (default /var/run/sandbox/token, the mounted Secret); wins over the env token. */
  tokenFile: 'SANDBOX_TOKEN_FILE',
  /** The token itself, used when the token file does not exist. */
  token: TOKEN_ENV,
  /** Workspace directory (default /workspace). */
  workspace: 'SANDBOX_WORKSPACE',
  /** Output cap per stream in bytes (default 1 MiB). */
  outputCapBytes: 'SANDBOX_AGENT_OUTPUT_CAP_BYTES',
  /** File size limit in bytes (default 32 MiB). */
  fileMaxBytes: 'SANDBOX_AGENT_FILE_MAX_BYTES',
  /** Exec request body limit in bytes (default 1 MiB). */
  execBodyMaxBytes: 'SANDBOX_AGENT_BODY_MAX_BYTES',
  /** Shutdown grace in seconds (default 20, inside the pod's default 30 s termination grace). */
  shutdownGraceSeconds: 'SANDBOX_AGENT_SHUTDOWN_GRACE_SECONDS',
  /** Path of bash (default `bash` on PATH). */
  bashPath: 'SANDBOX_AGENT_BASH',
  /** debug | info | warn | error | silent (default info). */
  logLevel: 'SANDBOX_AGENT_LOG_LEVEL',
  /** Decoded stdin bytes of one JSON exec request (default 1 MiB). */
  stdinMaxBytes: 'SANDBOX_AGENT_STDIN_MAX_BYTES',
  /** Background processes held (default 16). */
  maxProcesses: 'SANDBOX_AGENT_MAX_PROCESSES',
  /** Output ring per stream per background process in bytes (default 1 MiB). */
  processOutputBytes: 'SANDBOX_AGENT_PROCESS_OUTPUT_BYTES',
  /** Terminals open at a time (default 4). */
  maxTerminals: 'SANDBOX_AGENT_MAX_TERMINALS',
  /** Path of the sandbox-pty helper (default /opt/sandbox-agent/sandbox-pty). */
  ptyHelperPath: 'SANDBOX_AGENT_PTY_HELPER',
  /**
   * Prefix of the session's env: `SANDBOX_ENV_NODE_OPTIONS=x` becomes `NODE_OPTIONS=x` in the
   * user's bash (set by the operator's Pod builder from spec.env); removed from the agent's own
   * environment at start.
   */
  sessionEnvPrefix: SESSION_ENV_PREFIX,
  /** spec.startup.command (set by the operator's Pod builder; unset: no startup command). */
  startupCommand: STARTUP_COMMAND_ENV,
  /** The egress proxy's interception CA file (set by the operator's Pod builder; unset: no trust bundle). */
  egressCaFile: EGRESS_CA_ENV,
} as const;

/** Thrown when the configuration is invalid; the message lists every problem. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/** Input of {@link agentConfig}: the token and any overrides of {@link DEFAULT_CONFIG}. */
export type AgentConfigInput = Partial<AgentConfig> & Pick<AgentConfig, 'token'>;

/** Fills defaults and validates; throws {@link ConfigError} listing every problem. */
export function agentConfig(input: AgentConfigInput): AgentConfig {
  const config: AgentConfig = { ...DEFAULT_CONFIG, ...input };
  const problems = validate(config);
  if (problems.length > 0) throw new ConfigError(`invalid agent configuration: ${problems.join('; ')}`);
  return config;
}

function validate(c: AgentConfig): string[] {
  const problems: string[] = [];
  const check = (ok: boolean, problem: string): void => {
    if (!ok) problems.push(problem);
  };
  check(isIntIn(c.port, 0, 65_535), `port must be an integer in 0..65535, got ${c.port}`);
  check(c.host.length > 0, 'host must not be empty');
  if (c.bind) problems.push(...bindConfigProblems(c.bind));
  else {
    check(c.token.length >= MIN_TOKEN_LENGTH, `token must be at least ${MIN_TOKEN_LENGTH} characters`);
    check(!/\s/.test(c.token), 'token must not contain whitespace');
  }
  check(isAbsolute(c.workspace), `workspace must be an absolute path, got "${c.workspace}"`);
  for (const key of [
    'outputCapBytes',
    'fileMaxBytes',
    'execBodyMaxBytes',
    'stdinMaxBytes',
    'processOutputBytes',
  ] as const) {
    check(isIntIn(c[key], 1, Number.MAX_SAFE_INTEGER), `${key} must be a positive integer`);
  }
  for (const key of [
    'shutdownGraceMs',
    'requestTimeoutMs',
    'headersTimeoutMs',
    'keepAliveTimeoutMs',
  ] as const) {
    check(isIntIn(c[key], 0, 3_600_000), `${key} must be an integer in 0..3600000`);
  }
  check(c.bashPath.length > 0, 'bashPath must not be empty');
  if (c.egressCaFile !== undefined) {
    check(isAbsolute(c.egressCaFile), `egressCaFile must be an absolute path, got "${c.egressCaFile}"`);
  }
  if (c.startupCommand !== undefined) {
    check(!c.startupCommand.includes('\0'), 'startupCommand must not contain NUL');
    check(
      c.startupCommand.length <= MAX_STARTUP_COMMAND_LENGTH,
      `startupCommand is at most ${MAX_STARTUP_COMMAND_LENGTH} characters`,
    );
  }
  for (const name of Object.keys(c.sessionEnv)) {
    check(ENV_NAME.test(name), `session env name "${name}" is not a valid variable name`);
    check(!c.sessionEnv[name]?.includes('\0'), `session env ${name} must not contain NUL`);
  }
  check(isIntIn(c.maxQueuedCommands, 0, 100_000), 'maxQueuedCommands must be an integer in 0..100000');
  check(isIntIn(c.maxConnections, 1, 100_000), 'maxConnections must be an integer in 1..100000');
  check(isIntIn(c.maxProcesses, 0, 10_000), 'maxProcesses must be an integer in 0..10000');
  check(isIntIn(c.maxTerminals, 0, 1000), 'maxTerminals must be an integer in 0..1000');
  check(c.ptyHelperPath.length > 0, 'ptyHelperPath must not be empty');
  check(LOG_LEVELS.includes(c.logLevel), `logLevel must be one of ${LOG_LEVELS.join(', ')}`);
  return problems;
}

function isIntIn(value: number, min: number, max: number): boolean {
  return Number.isInteger(value) && value >= min && value <= max;
}

/** Reads and validates the configuration from the environment (the composition root's job). */
export function loadConfig(env: NodeJS.ProcessEnv): AgentConfig {
  const problems: string[] = [];
  const int = (name: string): number | undefined => {
    const raw = env[name];
    if (raw === undefined || raw === '') return undefined;
    if (!/^\d+$/.test(raw)) problems.push(`${name} must be a non-negative integer, got "${raw}"`);
    return Number(raw);
  };
  const grace = int(ENV.shutdownGraceSeconds);
  const input: Partial<AgentConfig> = {
    port: int(ENV.port),
    host: env[ENV.host] || undefined,
    workspace: env[ENV.workspace] || undefined,
    outputCapBytes: int(ENV.outputCapBytes),
    fileMaxBytes: int(ENV.fileMaxBytes),
    execBodyMaxBytes: int(ENV.execBodyMaxBytes),
    shutdownGraceMs: grace === undefined ? undefined : grace * 1000,
    bashPath: env[ENV.bashPath] || undefined,
    stdinMaxBytes: int(ENV.stdinMaxBytes),
    maxProcesses: int(ENV.maxProcesses),
    processOutputBytes: int(ENV.processOutputBytes),
    maxTerminals: int(ENV.maxTerminals),
    ptyHelperPath: env[ENV.ptyHelperPath] || undefined,
    logLevel: (env[ENV.logLevel] || undefined) as LogLevel | undefined,
    sessionEnv: sessionEnvFrom(env),
    startupCommand: env[ENV.startupCommand] || undefined,
    egressCaFile: env[ENV.egressCaFile] || undefined,
  };
  // A warm Pod's agent has no token until its bind (docs/adr/0016); it reads none.
  const bind = bindConfigFrom(env, problems);
  const token = bind ? '' : readToken(env, problems);
  if (problems.length > 0) throw new ConfigError(`invalid agent configuration: ${problems.join('; ')}`);
  const defined = Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined));
  return agentConfig({ ...defined, token, bind });
}

/** The session's env: every `SANDBOX_ENV_<name>` variable, under its own name. */
export function sessionEnvFrom(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    if (key.startsWith(SESSION_ENV_PREFIX) && value !== undefined)
      out[key.slice(SESSION_ENV_PREFIX.length)] = value;
  }
  return out;
}

/**
 * The token file wins when it exists (it is the mounted Secret); an explicitly named file must
 * exist. Otherwise the env token. Surrounding whitespace (a trailing newline) is not part of it.
 */
function readToken(env: NodeJS.ProcessEnv, problems: string[]): string {
  const explicitFile = env[ENV.tokenFile];
  const file = explicitFile || TOKEN_FILE;
  if (explicitFile || existsSync(file)) {
    try {
      return readFileSync(file, 'utf8').trim();
    } catch (err) {
      problems.push(`cannot read the token file ${file}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
      return '';
    }
  }
  const fromEnv = env[ENV.token]?.trim();
  if (!fromEnv) problems.push(`no token: neither the file ${file} nor ${ENV.token} is set`);
  return fromEnv ?? '';
}
