/**
 * The wire types of the gateway's REST API: request and response bodies as JSON. Part of the
 * publishable client (re-exported by ./index.ts) and free of imports; the gateway's exec transports
 * import the exec and file types from here (the agent answers with the same shapes, see
 * docs/architecture.md, "Agent HTTP API"), so each is declared once.
 */

/** Encoding of an output string. */
export type OutputEncoding = 'utf-8' | 'base64';

/** A session as the gateway returns it. */
export interface Session {
  name: string;
  namespace: string;
  uid: string;
  createdAt?: string;
  ready: boolean;
  reason: string;
  message: string;
  image?: string;
  execTransport: 'Agent' | 'KubernetesExec';
  idleTimeoutSeconds?: number;
  maxLifetimeSeconds?: number;
  shutdownPolicy?: 'Delete' | 'Retain';
  lastActivityTime?: string;
  expiresAt?: string;
}

/** POST /v1/sessions body. */
export interface CreateSessionRequest {
  name?: string;
  namespace?: string;
  image?: string;
  env?: Record<string, string>;
  idleTimeoutSeconds?: number;
  maxLifetimeSeconds?: number;
  shutdownPolicy?: 'Delete' | 'Retain';
  execTransport?: 'Agent' | 'KubernetesExec';
}

/** Exec request body. */
export interface ExecRequest {
  command: string;
  timeoutSeconds?: number;
  cwd?: string;
  env?: Record<string, string>;
  /** Bytes for the command's stdin (then EOF), spelled as stdinEncoding says; without it stdin is empty. */
  stdin?: string;
  /** Spelling of stdin (default utf-8; base64 for binary). */
  stdinEncoding?: OutputEncoding;
  /** Seconds to wait for a session that is not Ready yet. */
  waitSeconds?: number;
}

/** Result of one command (the agent's `POST /v1/exec` response, passed through). */
export interface ExecResult {
  stdout: string;
  stderr: string;
  stdoutEncoding: OutputEncoding;
  stderrEncoding: OutputEncoding;
  exitCode: number;
  durationMs: number;
  truncated: boolean;
  timedOut: boolean;
  shellReset: boolean;
}

/** One NDJSON line of a streaming exec. */
export type ExecStreamEvent =
  | { type: 'stdout' | 'stderr'; data: string; encoding: OutputEncoding }
  | {
      type: 'exit';
      exitCode: number;
      durationMs: number;
      truncated: boolean;
      timedOut: boolean;
      shellReset: boolean;
    };

/** An RFC 9457 problem body. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail?: string;
  reason?: string;
  [extension: string]: unknown;
}

/** Result of a file upload. */
export interface WriteFileResult {
  path: string;
  size: number;
}
