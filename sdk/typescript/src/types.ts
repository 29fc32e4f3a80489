/**
 * The wire types of the gateway's REST API (docs/gateway.md, "REST API"): request and response
 * bodies as JSON. They mirror api-gateway/src/routes/**\/schemas.ts; field names are the wire's.
 */

/** Encoding of an output string: UTF-8 text when the bytes were valid UTF-8, else base64. */
export type OutputEncoding = 'utf-8' | 'base64';

/** How the gateway reaches a session: its in-pod agent, or pods/exec through the API server. */
export type ExecTransport = 'Agent' | 'KubernetesExec';

/**
 * What happens to an idle or expired session: deleted; kept with Ready=False; or (idle only,
 * persistent workspaces only) suspended, to be resumed by the next call.
 */
export type ShutdownPolicy = 'Delete' | 'Retain' | 'Suspend';

/** A session as the gateway returns it. */
export interface Session {
  name: string;
  namespace: string;
  uid: string;
  /** RFC 3339. */
  createdAt?: string;
  /** True when commands can run now. */
  ready: boolean;
  /** Reason of the Ready condition, e.g. SandboxReady, PodPending, IdleTimeout. */
  reason: string;
  message: string;
  image?: string;
  execTransport: ExecTransport;
  idleTimeoutSeconds?: number;
  maxLifetimeSeconds?: number;
  shutdownPolicy?: ShutdownPolicy;
  /**
   * True while the session is suspended (spec.suspend): no Pod; the workspace and token are kept.
   * Any exec, file or MCP call resumes it (or resumeSession). Absent from gateways before 0.2.
   */
  suspended?: boolean;
  /** True when /workspace lives on a PersistentVolumeClaim (it survives suspension). */
  persistentWorkspace?: boolean;
  /** The SandboxPool the session was created from (spec.poolRef), if any. */
  pool?: string;
  lastActivityTime?: string;
  expiresAt?: string;
  /** The snapshot the workspace was restored from (spec.workspace.fromSnapshot), if any. */
  fromSnapshot?: string;
  /**
   * Condition WorkspaceVerified: a restore verified against the snapshot's digest (SnapshotVerified),
   * or a resumed workspace compared with the digest taken at suspension (ResumeVerified or
   * ResumeDigestMismatch).
   */
  workspaceVerified?: { status: 'True' | 'False' | 'Unknown'; reason: string; message: string };
}

/** POST /v1/sessions body. Every field is optional; the gateway's policy bounds them. */
export interface CreateSessionRequest {
  /** Create-or-get is idempotent by name; without one the gateway generates `sbx-...`. */
  name?: string;
  namespace?: string;
  image?: string;
  env?: Record<string, string>;
  idleTimeoutSeconds?: number;
  maxLifetimeSeconds?: number;
  shutdownPolicy?: ShutdownPolicy;
  execTransport?: ExecTransport;
  /**
   * Keep /workspace (= HOME) on a PersistentVolumeClaim of the cluster's default StorageClass, so
   * it survives suspension and Pod loss. Needed by shutdownPolicy Suspend.
   */
  persistentWorkspace?: boolean;
  /**
   * Name of a SandboxPool (warm pool) of the namespace: the session is bound to one of its running
   * Pods instead of starting one (cold from the pool's template when none is available). The pool
   * decides the sandbox, so image, env, execTransport and persistentWorkspace cannot be given too.
   */
  pool?: string;
}

/** POST /v1/sessions/{name}/resume body. */
export interface ResumeRequest {
  /**
   * Seconds the gateway waits for the resumed session to be Ready before answering (0, the
   * default: answer at once); 503 session-not-ready (UnavailableError) when it is not Ready by then.
   */
  waitSeconds?: number;
}

/** Exec request body (buffered and streaming). */
export interface ExecRequest {
  /** A bash command line. */
  command: string;
  /** Seconds before the command is killed (gateway default 60, at most 300). */
  timeoutSeconds?: number;
  /** Working directory, relative to /workspace or absolute. */
  cwd?: string;
  /** Extra environment variables for this command. */
  env?: Record<string, string>;
  /** Bytes for the command's stdin (then end of file), spelled as stdinEncoding says; at most 1 MiB. */
  stdin?: string;
  /** Spelling of stdin: utf-8 (default) or base64 (binary). */
  stdinEncoding?: OutputEncoding;
  /** Seconds to wait for a session that is not Ready yet (gateway default 30). */
  waitSeconds?: number;
}

/**
 * A streaming exec: `stdin` may also be an async iterable of bytes (a Node Readable is one), sent
 * to the command as it is produced (an NDJSON request body; Agent transport only). Its end is EOF.
 */
export interface ExecStreamRequest extends Omit<ExecRequest, 'stdin'> {
  stdin?: string | AsyncIterable<Uint8Array>;
}

/** Result of one command. A non-zero exit is a normal result. */
export interface ExecResult {
  stdout: string;
  stderr: string;
  stdoutEncoding: OutputEncoding;
  stderrEncoding: OutputEncoding;
  /** 124 on timeout, 128+N when killed by signal N. */
  exitCode: number;
  durationMs: number;
  /** Output exceeded the cap (1 MiB per stream) and was cut. */
  truncated: boolean;
  timedOut: boolean;
  /** The session's shell was restarted before this command: earlier shell state is lost. */
  shellReset: boolean;
}

/** An output chunk of a streaming exec. */
export interface ExecOutputEvent {
  type: 'stdout' | 'stderr';
  data: string;
  encoding: OutputEncoding;
}

/** The last event of a streaming exec. */
export interface ExecExitEvent {
  type: 'exit';
  exitCode: number;
  durationMs: number;
  truncated: boolean;
  timedOut: boolean;
  shellReset: boolean;
  /**
   * Only when a streamed request sent a stdin line that was not valid after the command started:
   * what was wrong (the command was stopped as on cancellation, exit 137).
   */
  stdinError?: string;
}

/** One NDJSON line of a streaming exec; the last one is `exit`. */
export type ExecStreamEvent = ExecOutputEvent | ExecExitEvent;

/** An RFC 9457 problem body. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail?: string;
  /** e.g. the session's Ready reason on 503 session-not-ready, or why it is gone on 410. */
  reason?: string;
  [extension: string]: unknown;
}

/** Result of a file upload. */
export interface WriteFileResult {
  path: string;
  size: number;
}

/** Start of a background process. */
export interface ProcessStartRequest {
  /** A bash command line (run in its own process group; it outlives the call). */
  command: string;
  /** Working directory, relative to /workspace or absolute. */
  cwd?: string;
  /** Extra environment variables for this process. */
  env?: Record<string, string>;
  /** Seconds to wait for a session that is not Ready yet (gateway default 30). */
  waitSeconds?: number;
}

/** Signals a background process may be sent (others are refused: 400 signal-not-allowed). */
export type ProcessSignal =
  'SIGHUP' | 'SIGINT' | 'SIGQUIT' | 'SIGKILL' | 'SIGTERM' | 'SIGUSR1' | 'SIGUSR2' | 'SIGSTOP' | 'SIGCONT';

/** Byte counters of one output stream of a background process. */
export interface OutputCounters {
  /** Bytes the process wrote to the stream so far. */
  size: number;
  /** Oldest bytes no longer held (the buffer is a ring); offsets below this are gone. */
  dropped: number;
}

/** A background process. */
export interface ProcessInfo {
  /** 12 hex digits, never reused. */
  id: string;
  pid: number;
  /** The command as started (its first 4096 characters). */
  command: string;
  cwd?: string;
  state: 'running' | 'exited';
  /** Only when exited: 128+N when killed by signal N. */
  exitCode?: number;
  /** Only when exited by a signal: its name. */
  signal?: string;
  startedAt: string;
  exitedAt?: string;
  stdout: OutputCounters;
  stderr: OutputCounters;
}

/** One stream's part of a process output read. */
export interface OutputChunk {
  /** Offset of the first byte of data. */
  offset: number;
  /** Offset to read from next. */
  nextOffset: number;
  /** Bytes between the requested offset and offset that were dropped from the ring. */
  skipped: number;
  data: string;
  encoding: OutputEncoding;
}

/** A read of a process's output. */
export interface ProcessOutput {
  process: ProcessInfo;
  stdout: OutputChunk;
  stderr: OutputChunk;
}

/** Offsets and size of an output read. */
export interface ProcessOutputQuery {
  stdoutOffset?: number;
  stderrOffset?: number;
  /** Most bytes per stream (gateway default and maximum 1 MiB). */
  maxBytes?: number;
}

/** Offsets and length of a follow. */
export interface ProcessFollowQuery {
  stdoutOffset?: number;
  stderrOffset?: number;
  /** Seconds before the gateway ends the follow without an exit event (default 60, at most 300). */
  timeoutSeconds?: number;
}

/** An output event of a followed process. */
export interface ProcessOutputEvent {
  type: 'stdout' | 'stderr';
  offset: number;
  skipped: number;
  data: string;
  encoding: OutputEncoding;
}

/** The last event of a followed process that exited. */
export interface ProcessExitEvent {
  type: 'exit';
  exitCode: number;
  signal?: string;
}

/** One event of a follow: output events, then an exit event when the process ended. */
export type ProcessFollowEvent = ProcessOutputEvent | ProcessExitEvent;

/** A run of code in a context of a session (a Jupyter kernel; POST /v1/sessions/{name}/code). */
export interface RunCodeRequest {
  /** Source to run, as a notebook cell: the value of a last expression is the result. */
  code: string;
  /** Context name (default "default"): each has its own kernel and variables. */
  context?: string;
  /** Language of the context (only python; fixed when the context starts). */
  language?: 'python';
  /** Seconds before the run is interrupted (default 60, at most 300); the context stays usable. */
  timeoutSeconds?: number;
  /** Seconds to wait for a session that is not Ready yet. */
  waitSeconds?: number;
}

/** A result (the last expression's value) or a display of a run: MIME type -> content. */
export interface CodeOutput {
  type: 'result' | 'display';
  /** E.g. {"text/plain": "42"}; images as base64, application/json as JSON text. */
  data: Record<string, string>;
  /** Items left out because they were over the size bounds. */
  omitted?: Array<{ mime: string; bytes: number }>;
}

/** How a run ended. */
export type CodeStatus = 'ok' | 'error' | 'timeout' | 'interrupted' | 'kernel-died';

/** A whole run. */
export interface CodeResult {
  status: CodeStatus;
  stdout: string;
  stderr: string;
  /** Results and displays in the order the kernel gave them. */
  outputs: CodeOutput[];
  error?: { name: string; value: string; traceback: string[] };
  executionCount?: number;
  durationMs: number;
  /** A new kernel ran this code: variables of earlier runs are gone. */
  contextReset: boolean;
  /** Something was dropped or omitted (see dropped and each output's omitted). */
  truncated: boolean;
  dropped: { stdout: number; stderr: number; displays: number };
}

/** One event of a streamed run; the last one is `end`. */
export type CodeEvent =
  | { type: 'stdout' | 'stderr'; text: string }
  | (CodeOutput & { executionCount?: number })
  | { type: 'error'; name: string; value: string; traceback: string[] }
  | ({ type: 'end' } & Omit<CodeResult, 'stdout' | 'stderr' | 'outputs' | 'error'>);

/** A code context. */
export interface CodeContext {
  name: string;
  language: 'python';
  state: 'starting' | 'idle' | 'busy' | 'stopped';
  pid?: number;
  executionCount: number;
  createdAt: string;
  lastRunAt?: string;
}

/** What a watch follows (GET /v1/sessions/{name}/watch). */
export interface WatchRequest {
  /** Directory relative to the workspace (default: the workspace). */
  path?: string;
  /** Subdirectories too (default false). */
  recursive?: boolean;
  /** Seconds before the watch ends with reason timeout (default 300, at most 3600). */
  timeoutSeconds?: number;
}

/** A line of a watch: watching first, changes and overflows, one end last. */
export type WatchLine =
  | { type: 'create' | 'modify' | 'delete' | 'rename'; path: string; from?: string; directory: boolean }
  | { type: 'watching'; path: string; recursive: boolean }
  | { type: 'overflow'; dropped: number }
  | { type: 'end'; reason: string };
