/**
 * SandboxClient: typed calls of the gateway's REST API (docs/gateway.md). No dependencies beyond
 * the platform's fetch, so it runs in Node 20+, Deno, Bun and browsers. Errors are SandboxErrors
 * (errors.ts); only idempotent calls are retried (http.ts), never an exec.
 */
import { NotFoundError, PROBLEM_TYPE_BASE, ProtocolError, TimeoutError, errorFromProblem } from './errors.js';
import {
  readBounded,
  readJson,
  send,
  sleep,
  type CallSpec,
  type HttpConfig,
  type RetryOptions,
} from './http.js';
import * as code from './code.js';
import * as egress from './egress.js';
import type { AuditPage, AuditVerification, Egress } from './egress.js';
import * as snapshots from './snapshots.js';
import type { ForkRequest, ForkResult, Snapshot, SnapshotRequest } from './snapshots.js';
import { encodeBase64 } from './encoding.js';
import { ndjsonLines } from './ndjson.js';
import type {
  CodeContext,
  CodeEvent,
  CodeResult,
  CreateSessionRequest,
  ExecExitEvent,
  ExecRequest,
  ExecResult,
  ExecStreamEvent,
  ExecStreamRequest,
  OutputEncoding,
  ProcessFollowEvent,
  ProcessFollowQuery,
  ProcessInfo,
  ProcessOutput,
  ProcessOutputQuery,
  ProcessSignal,
  ProcessStartRequest,
  ResumeRequest,
  RunCodeRequest,
  Session,
  WatchLine,
  WatchRequest,
  WriteFileResult,
} from './types.js';

/** Client options. */
export interface SandboxClientOptions {
  /** Base URL of the gateway, e.g. http://gateway.sandbox-system:8080 */
  baseUrl: string;
  /** API key (sent as `Authorization: Bearer`). */
  apiKey: string;
  /** Namespace of every call that names none (else the key's default namespace). */
  namespace?: string;
  /** fetch implementation (tests, proxies); defaults to the global fetch. */
  fetch?: typeof fetch;
  /** Retries of idempotent calls (reads, create-or-get by name, delete, upload). */
  retry?: RetryOptions;
  /**
   * Client-side deadline of session and file calls in ms (default 150 000: a file call may wait up
   * to the gateway's longest readiness wait, 120 s). Exec calls get the command's timeout plus its
   * readiness wait plus 30 s instead.
   */
  timeoutMs?: number;
  /** Largest JSON or file answer read into memory (default 64 MiB; the gateway's file limit is 16 MiB). */
  maxResponseBytes?: number;
  /** Extra request headers (e.g. for a proxy in front of the gateway). */
  headers?: Record<string, string>;
}

/** The options of the first gateway client; an alias kept so code written for it compiles unchanged. */
export type GatewayClientOptions = SandboxClientOptions;

/** Per-call options. Passing a string instead is the namespace. */
export interface CallOptions {
  /** Namespace of this call (else the client's, else the key's default). */
  namespace?: string;
  /** Aborts the call. */
  signal?: AbortSignal;
  /** Client-side deadline of this call in ms (overrides the client's). */
  timeoutMs?: number;
}

/** Options of waitUntilReady. */
export interface WaitOptions extends CallOptions {
  /** Give up after this many ms (default 120 000). */
  timeoutMs?: number;
  /** Poll interval in ms (default 1000). */
  intervalMs?: number;
}

/** Longest NDJSON line of an exec stream: a 1 MiB output chunk as base64 plus framing. */
const MAX_STREAM_LINE_BYTES = 4 * 1024 * 1024;
const DEFAULT_TIMEOUT_MS = 150_000;
/** The gateway's own exec maxima (docs/gateway.md): used for the client deadline when unset. */
const MAX_EXEC_TIMEOUT_S = 300;
const MAX_WAIT_S = 120;
const EXEC_MARGIN_S = 30;

/** Typed calls of the gateway's REST API. */
export class SandboxClient {
  private readonly http: HttpConfig;
  private readonly namespace: string | undefined;
  private readonly timeoutMs: number;

  constructor(options: SandboxClientOptions) {
    this.http = httpConfig(options);
    this.namespace = options.namespace;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  /**
   * Create-or-get: creates the session, or returns the one of that name (`created` false). With a
   * name the call is idempotent and retried; without one the gateway generates a name, so it is not.
   */
  async createSession(
    req: CreateSessionRequest = {},
    opts: CallOptions = {},
  ): Promise<{ session: Session; created: boolean }> {
    const ok = await this.call(opts, {
      method: 'POST',
      path: '/v1/sessions',
      body: jsonBody(req),
      idempotent: req.name !== undefined,
    });
    const created = ok.response.status === 201;
    return { session: await readJson<Session>(ok, this.http.maxResponseBytes), created };
  }

  /** One session. */
  async getSession(name: string, opts?: string | CallOptions): Promise<Session> {
    const ok = await this.call(opts, { method: 'GET', path: `/v1/sessions/${seg(name)}`, idempotent: true });
    return readJson<Session>(ok, this.http.maxResponseBytes);
  }

  /** The sessions of a namespace, sorted by name. */
  async listSessions(opts?: string | CallOptions): Promise<Session[]> {
    const ok = await this.call(opts, { method: 'GET', path: '/v1/sessions', idempotent: true });
    return (await readJson<{ items: Session[] }>(ok, this.http.maxResponseBytes)).items;
  }

  /**
   * Deletes a session (its pod and secret go with it). When a retry follows an attempt that may
   * have arrived, a 404 means that attempt deleted it, and counts as success.
   */
  async deleteSession(name: string, opts?: string | CallOptions): Promise<void> {
    let retried = false;
    const spec: CallSpec = {
      method: 'DELETE',
      path: `/v1/sessions/${seg(name)}`,
      idempotent: true,
      onRetry: () => (retried = true),
    };
    let ok;
    try {
      ok = await this.call(opts, spec);
    } catch (err) {
      if (err instanceof NotFoundError && retried) return;
      throw err;
    }
    ok.done();
    await ok.response.body?.cancel();
  }

  /**
   * Polls a session until it is Ready and returns it. Throws TimeoutError (with the last reason)
   * when it is not Ready in time, and NotFoundError / SessionGoneError at once.
   */
  async waitUntilReady(name: string, opts: WaitOptions = {}): Promise<Session> {
    const timeoutMs = opts.timeoutMs ?? 120_000;
    const interval = opts.intervalMs ?? 1000;
    const end = Date.now() + timeoutMs;
    for (;;) {
      const callOpts: CallOptions = {
        ...opts,
        timeoutMs: Math.max(1000, Math.min(this.timeoutMs, end - Date.now())),
      };
      const session = await this.getSession(name, callOpts);
      if (session.ready) return session;
      if (Date.now() + interval > end) {
        throw new TimeoutError(
          `session ${name} is not ready after ${Math.round(timeoutMs / 1000)} s: ${session.reason}${
            session.message ? `: ${session.message}` : ''
          }`,
        );
      }
      await sleep(interval, opts.signal);
    }
  }

  /**
   * Suspends a session: its Pod is deleted; its workspace (persistent workspaces), Secret and token
   * are kept. Idempotent (retried). The next exec, file or MCP call resumes it, as does resumeSession.
   */
  async suspendSession(name: string, opts?: string | CallOptions): Promise<Session> {
    const ok = await this.call(opts, {
      method: 'POST',
      path: `/v1/sessions/${seg(name)}/suspend`,
      body: jsonBody({}),
      idempotent: true,
    });
    return readJson<Session>(ok, this.http.maxResponseBytes);
  }

  /**
   * Resumes a suspended session (a new Pod on the same workspace); a session that is not suspended
   * is returned as it is. With `waitSeconds` the gateway answers once it is Ready. Idempotent
   * (retried). Not needed before an exec: an exec (or file call) resumes the session itself.
   */
  async resumeSession(name: string, req: ResumeRequest = {}, opts?: string | CallOptions): Promise<Session> {
    const ok = await this.call(opts, {
      method: 'POST',
      path: `/v1/sessions/${seg(name)}/resume`,
      body: jsonBody(req),
      idempotent: true,
      timeoutMs: ((req.waitSeconds ?? 0) + EXEC_MARGIN_S) * 1000,
    });
    return readJson<Session>(ok, this.http.maxResponseBytes);
  }

  /** Runs a command and returns its result; a non-zero exit is a normal result (check exitCode). Never retried. */
  async exec(name: string, req: ExecRequest, opts?: string | CallOptions): Promise<ExecResult> {
    const ok = await this.call(opts, {
      method: 'POST',
      path: `/v1/sessions/${seg(name)}/exec`,
      body: jsonBody(req),
      idempotent: false,
      timeoutMs: execDeadlineMs(req),
    });
    return readJson<ExecResult>(ok, this.http.maxResponseBytes);
  }

  /**
   * Runs a command and yields its output events as they arrive; the last one is `exit`. A stream
   * that ends without it throws ProtocolError. Breaking out of the loop stops the download. Never retried.
   * `stdin` may be an async iterable of bytes (a Node Readable): streamed to the command as it is
   * produced, its end is EOF (the gateway bounds the total: GATEWAY_MAX_EXEC_STDIN_STREAM_BYTES).
   */
  async *execStream(
    name: string,
    req: ExecStreamRequest,
    opts?: string | CallOptions,
  ): AsyncGenerator<ExecStreamEvent> {
    const { stdin, ...rest } = req;
    const streamed = stdin !== undefined && typeof stdin !== 'string';
    const ok = await this.call(opts, {
      method: 'POST',
      path: `/v1/sessions/${seg(name)}/exec/stream`,
      body: streamed ? { data: stdinBody(rest, stdin), contentType: 'application/x-ndjson' } : jsonBody(req),
      idempotent: false,
      timeoutMs: execDeadlineMs(req),
    });
    try {
      if (!ok.response.body) throw new ProtocolError('the exec stream has no body');
      for await (const value of ndjsonLines(ok.response.body, MAX_STREAM_LINE_BYTES)) {
        const event = toStreamEvent(value);
        yield event;
        if (event.type === 'exit') return;
      }
      throw new ProtocolError('the exec stream ended without an exit event (connection lost?)');
    } finally {
      ok.done();
    }
  }

  /**
   * Runs a streaming exec, handing each chunk's bytes to `onOutput`, and returns the exit event.
   * A convenience over execStream for callers that forward output (a CLI, a log).
   */
  async execStreamTo(
    name: string,
    req: ExecStreamRequest,
    onOutput: (stream: 'stdout' | 'stderr', data: string, encoding: OutputEncoding) => void | Promise<void>,
    opts?: string | CallOptions,
  ): Promise<ExecExitEvent> {
    for await (const event of this.execStream(name, req, opts)) {
      if (event.type === 'exit') return event;
      await onOutput(event.type, event.data, event.encoding);
    }
    throw new ProtocolError('the exec stream ended without an exit event');
  }

  /** Uploads bytes to a workspace-relative path (atomic replace; idempotent, so retried). */
  async writeFile(
    name: string,
    path: string,
    data: Uint8Array | ArrayBuffer | string,
    opts?: string | CallOptions,
  ): Promise<WriteFileResult> {
    const bytes =
      typeof data === 'string'
        ? new TextEncoder().encode(data)
        : data instanceof ArrayBuffer
          ? new Uint8Array(data)
          : data;
    const ok = await this.call(opts, {
      method: 'PUT',
      path: `/v1/sessions/${seg(name)}/files/${filePath(path)}`,
      body: { data: bytes, contentType: 'application/octet-stream' },
      idempotent: true,
    });
    return readJson<WriteFileResult>(ok, this.http.maxResponseBytes);
  }

  /** Downloads a workspace file's bytes. */
  async readFile(name: string, path: string, opts?: string | CallOptions): Promise<Uint8Array> {
    const ok = await this.call(opts, {
      method: 'GET',
      path: `/v1/sessions/${seg(name)}/files/${filePath(path)}`,
      idempotent: true,
    });
    try {
      return await readBounded(ok.response, this.http.maxResponseBytes);
    } finally {
      ok.done();
    }
  }

  /**
   * Starts a command in the background (its own process group; it outlives the call and ends with
   * the session). Never retried: a second attempt could start it twice.
   */
  async startProcess(
    name: string,
    req: ProcessStartRequest,
    opts?: string | CallOptions,
  ): Promise<ProcessInfo> {
    const ok = await this.call(opts, {
      method: 'POST',
      path: processesPath(name),
      body: jsonBody(req),
      idempotent: false,
      timeoutMs: ((req.waitSeconds ?? MAX_WAIT_S) + EXEC_MARGIN_S) * 1000,
    });
    return readJson<ProcessInfo>(ok, this.http.maxResponseBytes);
  }

  /** The background processes of a session (running and exited), oldest first. */
  async listProcesses(name: string, opts?: string | CallOptions): Promise<ProcessInfo[]> {
    const ok = await this.call(opts, { method: 'GET', path: processesPath(name), idempotent: true });
    return (await readJson<{ processes: ProcessInfo[] }>(ok, this.http.maxResponseBytes)).processes;
  }

  /** One background process. */
  async getProcess(name: string, id: string, opts?: string | CallOptions): Promise<ProcessInfo> {
    const ok = await this.call(opts, { method: 'GET', path: processesPath(name, id), idempotent: true });
    return readJson<ProcessInfo>(ok, this.http.maxResponseBytes);
  }

  /** Reads a process's output from byte offsets; pass each chunk's nextOffset to read what is new. */
  async processOutput(
    name: string,
    id: string,
    query: ProcessOutputQuery = {},
    opts?: string | CallOptions,
  ): Promise<ProcessOutput> {
    const path = processesPath(name, id, 'output') + search({ ...query });
    const ok = await this.call(opts, { method: 'GET', path, idempotent: true });
    return readJson<ProcessOutput>(ok, this.http.maxResponseBytes);
  }

  /**
   * Follows a process's output: yields output events as they come, then an exit event when it
   * ends. A follow that reaches its timeoutSeconds ends without an exit event: follow again from
   * the last offsets (offset + the event's byte length). Breaking out of the loop stops it.
   */
  async *followProcess(
    name: string,
    id: string,
    query: ProcessFollowQuery = {},
    opts?: string | CallOptions,
  ): AsyncGenerator<ProcessFollowEvent> {
    const path = processesPath(name, id, 'output/stream') + search({ ...query });
    const ok = await this.call(opts, {
      method: 'GET',
      path,
      idempotent: false,
      timeoutMs: ((query.timeoutSeconds ?? MAX_EXEC_TIMEOUT_S) + EXEC_MARGIN_S) * 1000,
    });
    try {
      if (!ok.response.body) throw new ProtocolError('the follow stream has no body');
      for await (const value of ndjsonLines(ok.response.body, MAX_STREAM_LINE_BYTES)) {
        const type = (value as { type?: unknown } | null)?.type;
        if (type !== 'stdout' && type !== 'stderr' && type !== 'exit') {
          throw new ProtocolError(`unexpected follow event: ${JSON.stringify(value).slice(0, 80)}`);
        }
        yield value as ProcessFollowEvent;
        if (type === 'exit') return;
      }
    } finally {
      ok.done();
    }
  }

  /** Sends a signal to the process's group (default SIGTERM). Never retried. */
  async signalProcess(
    name: string,
    id: string,
    signal: ProcessSignal = 'SIGTERM',
    opts?: string | CallOptions,
  ): Promise<ProcessInfo> {
    const ok = await this.call(opts, {
      method: 'POST',
      path: processesPath(name, id, 'signal'),
      body: jsonBody({ signal }),
      idempotent: false,
    });
    return readJson<ProcessInfo>(ok, this.http.maxResponseBytes);
  }

  /** Waits up to timeoutSeconds (default 30, at most 300) for the exit; `state` says whether it came. */
  async waitProcess(
    name: string,
    id: string,
    timeoutSeconds = 30,
    opts?: string | CallOptions,
  ): Promise<ProcessInfo> {
    const ok = await this.call(opts, {
      method: 'GET',
      path: processesPath(name, id, 'wait') + search({ timeoutSeconds }),
      idempotent: true,
      timeoutMs: (timeoutSeconds + EXEC_MARGIN_S) * 1000,
    });
    return readJson<ProcessInfo>(ok, this.http.maxResponseBytes);
  }

  /** Removes an exited process (ConflictError-like 409 process-running while it runs). Retried. */
  async removeProcess(name: string, id: string, opts?: string | CallOptions): Promise<void> {
    let retried = false;
    let ok;
    try {
      ok = await this.call(opts, {
        method: 'DELETE',
        path: processesPath(name, id),
        idempotent: true,
        onRetry: () => (retried = true),
      });
    } catch (err) {
      // A 404 after a retry: an earlier attempt removed it.
      if (err instanceof NotFoundError && retried) return;
      throw err;
    }
    ok.done();
    await ok.response.body?.cancel();
  }

  /**
   * Runs code in a context of the session (a Jupyter kernel in the sandbox, started on first use;
   * variables persist between runs) and returns the whole run: output, results and displays in
   * every MIME type (charts as base64 image/png), the error. Never retried. See code.ts.
   */
  runCode(name: string, req: RunCodeRequest, opts?: string | CallOptions): Promise<CodeResult> {
    return code.runCode(this.caller, name, req, opts);
  }

  /** Runs code and yields its events as they come; the last one is `end`. */
  runCodeStream(name: string, req: RunCodeRequest, opts?: string | CallOptions): AsyncGenerator<CodeEvent> {
    return code.runCodeStream(this.caller, name, req, opts);
  }

  /** The code contexts of a session. */
  listCodeContexts(name: string, opts?: string | CallOptions): Promise<CodeContext[]> {
    return code.listCodeContexts(this.caller, name, opts);
  }

  /** Starts a code context now (a run starts it otherwise). */
  createCodeContext(
    name: string,
    context: { name: string; language?: 'python' },
    opts?: string | CallOptions,
  ): Promise<CodeContext> {
    return code.createCodeContext(this.caller, name, context, opts);
  }

  /** Interrupts the running code of a context (KeyboardInterrupt in Python). */
  interruptCodeContext(name: string, context: string, opts?: string | CallOptions): Promise<CodeContext> {
    return code.codeContextAction(this.caller, name, { context, action: 'interrupt' }, opts);
  }

  /** Restarts the kernel of a context: every variable is gone. */
  restartCodeContext(name: string, context: string, opts?: string | CallOptions): Promise<CodeContext> {
    return code.codeContextAction(this.caller, name, { context, action: 'restart' }, opts);
  }

  /** Removes a code context. */
  deleteCodeContext(name: string, context: string, opts?: string | CallOptions): Promise<void> {
    return code.deleteCodeContext(this.caller, name, context, opts);
  }

  /** Follows changes under a workspace directory (see code.ts watch); breaking out stops it. */
  watch(name: string, req: WatchRequest = {}, opts?: string | CallOptions): AsyncGenerator<WatchLine> {
    return code.watch(this.caller, name, req, opts);
  }

  /**
   * Takes a snapshot of a session's /workspace (docs/snapshots.md); answers at once (ready false):
   * waitUntilSnapshotReady or getSnapshot until ready. Not retried without a name.
   */
  snapshot(session: string, req: SnapshotRequest = {}, opts?: string | CallOptions): Promise<Snapshot> {
    return snapshots.snapshot(this.caller, session, req, opts);
  }

  /** One snapshot. */
  getSnapshot(name: string, opts?: string | CallOptions): Promise<Snapshot> {
    return snapshots.getSnapshot(this.caller, name, opts);
  }

  /** The snapshots of a namespace, sorted by name. */
  listSnapshots(opts?: string | CallOptions): Promise<Snapshot[]> {
    return snapshots.listSnapshots(this.caller, opts);
  }

  /** Deletes a snapshot (its stored data goes with it). */
  deleteSnapshot(name: string, opts?: string | CallOptions): Promise<void> {
    return snapshots.deleteSnapshot(this.caller, name, opts);
  }

  /** A session's egress rules (docs/egress.md). */
  getEgress(name: string, opts?: string | CallOptions): Promise<Egress> {
    return egress.getEgress(this.caller, name, opts);
  }

  /**
   * Replaces a session's egress rules; the egress proxy applies them within a second. A host the
   * namespace's policy does not allow is refused (PolicyViolation, 403).
   */
  setEgress(name: string, rules: Egress, opts?: string | CallOptions): Promise<Egress> {
    return egress.setEgress(this.caller, name, rules, opts);
  }

  /** One page of a session's audit records, oldest first (afterSeq: the previous page's nextSeq). */
  auditRecords(
    name: string,
    page: { afterSeq?: number; limit?: number } = {},
    opts?: string | CallOptions,
  ): Promise<AuditPage> {
    return egress.auditRecords(this.caller, name, page, opts);
  }

  /** Recomputes the session's audit hash chain over what is stored; `valid` false names the first broken record. */
  verifyAudit(name: string, opts?: string | CallOptions): Promise<AuditVerification> {
    return egress.verifyAudit(this.caller, name, opts);
  }

  /** Polls a snapshot until it is ready; throws when it failed or is not ready in time. */
  waitUntilSnapshotReady(name: string, opts: WaitOptions = {}): Promise<Snapshot> {
    return snapshots.waitUntilSnapshotReady(this.caller, name, opts, opts);
  }

  /**
   * Forks a session: a snapshot of its /workspace and `count` new sessions started from it, with the
   * same image and settings; each is ready once its copy is verified against the snapshot's digest.
   */
  fork(session: string, req: ForkRequest, opts?: string | CallOptions): Promise<ForkResult> {
    return snapshots.fork(this.caller, session, req, opts);
  }

  private get caller(): code.Caller {
    return { call: (opts, spec) => this.call(opts, spec), maxBytes: this.http.maxResponseBytes };
  }

  private call(opts: string | CallOptions | undefined, spec: CallSpec): ReturnType<typeof send> {
    const o: CallOptions = typeof opts === 'string' ? { namespace: opts } : (opts ?? {});
    return send(this.http, {
      ...spec,
      namespace: o.namespace ?? this.namespace,
      timeoutMs: o.timeoutMs ?? spec.timeoutMs ?? this.timeoutMs,
      signal: o.signal,
    });
  }
}

/** The first client's name; the same class. */
export const GatewayClient = SandboxClient;
/** The first client's name; the same class. */
export type GatewayClient = SandboxClient;

/** Refuses options that cannot work (no silent defaults for the URL or the key). */
function checkOptions(options: SandboxClientOptions): void {
  if (!options.baseUrl) throw new TypeError('SandboxClient: baseUrl is required');
  if (!/^https?:\/\//i.test(options.baseUrl)) {
    throw new TypeError(`SandboxClient: baseUrl must be an http(s) URL, got "${options.baseUrl}"`);
  }
  if (!options.apiKey) throw new TypeError('SandboxClient: apiKey is required');
  if (!options.fetch && typeof globalThis.fetch !== 'function') {
    throw new TypeError('SandboxClient: no fetch in this runtime; pass one');
  }
}

/** Validated options with their defaults. */
function httpConfig(options: SandboxClientOptions): HttpConfig {
  checkOptions(options);
  const retry = options.retry ?? {};
  return {
    baseUrl: options.baseUrl,
    apiKey: options.apiKey,
    // Unbound global fetch throws "Illegal invocation" in browsers.
    fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
    headers: options.headers ?? {},
    retry: {
      retries: retry.retries ?? 2,
      initialDelayMs: retry.initialDelayMs ?? 250,
      maxDelayMs: retry.maxDelayMs ?? 10_000,
    },
    maxResponseBytes: options.maxResponseBytes ?? 64 * 1024 * 1024,
  };
}

function execDeadlineMs(req: Pick<ExecRequest, 'timeoutSeconds' | 'waitSeconds'>): number {
  return (
    ((req.timeoutSeconds ?? MAX_EXEC_TIMEOUT_S) + (req.waitSeconds ?? MAX_WAIT_S) + EXEC_MARGIN_S) * 1000
  );
}

function toStreamEvent(value: unknown): ExecStreamEvent {
  const type = (value as { type?: unknown } | null)?.type;
  if (type === 'stdout' || type === 'stderr' || type === 'exit') return value as ExecStreamEvent;
  throw new ProtocolError(`unexpected exec stream event: ${JSON.stringify(value).slice(0, 80)}`);
}

/** Raw stdin bytes per NDJSON stdin line (base64 of it stays well under the gateway's 1 MiB line limit). */
const STDIN_LINE_BYTES = 256 * 1024;

/**
 * An NDJSON exec/stream body: the request line, then the caller's stdin as base64 stdin lines as
 * it is produced (pulled: backpressure reaches the iterable), then the close line.
 */
function stdinBody(
  req: Omit<ExecStreamRequest, 'stdin'>,
  stdin: AsyncIterable<Uint8Array>,
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  const line = (value: unknown): Uint8Array => encoder.encode(JSON.stringify(value) + '\n');
  const chunks = stdin[Symbol.asyncIterator]();
  let first = true;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (first) {
        first = false;
        return controller.enqueue(line(req));
      }
      const next = await chunks.next();
      if (next.done) {
        controller.enqueue(line({ type: 'close' }));
        return controller.close();
      }
      for (let at = 0; at < next.value.length; at += STDIN_LINE_BYTES) {
        const data = encodeBase64(next.value.subarray(at, at + STDIN_LINE_BYTES));
        controller.enqueue(line({ type: 'stdin', data, encoding: 'base64' }));
      }
    },
    async cancel() {
      await chunks.return?.();
    },
  });
}

function jsonBody(value: unknown): { data: string; contentType: string } {
  return { data: JSON.stringify(value), contentType: 'application/json' };
}

/** `/v1/sessions/<name>/processes[/<id>[/<action>]]`, segments encoded. */
function processesPath(name: string, id?: string, action?: string): string {
  const base = `/v1/sessions/${seg(name)}/processes`;
  if (id === undefined) return base;
  return `${base}/${seg(id)}${action === undefined ? '' : `/${action}`}`;
}

/** `?a=1&b=2` of the defined numeric members, or ''. */
function search(query: Record<string, number | undefined>): string {
  const parts = Object.entries(query)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${encodeURIComponent(k)}=${String(v)}`);
  return parts.length === 0 ? '' : `?${parts.join('&')}`;
}

/** A path segment (session name). */
function seg(segment: string): string {
  return encodeURIComponent(segment);
}

/**
 * A workspace path: each segment encoded, the slashes kept. `.` and `..` segments are refused here
 * with the gateway's own answer (403 path-forbidden): URL parsing would otherwise resolve them
 * before sending (even as %2E), turning `../x` into a call of another route.
 */
function filePath(path: string): string {
  const segments = path.split('/');
  if (segments.some((s) => s === '.' || s === '..')) {
    const problem = {
      type: `${PROBLEM_TYPE_BASE}path-forbidden`,
      title: 'The path leaves the sandbox workspace',
      status: 403,
      detail: `path ${path} has a "." or ".." segment`,
    };
    throw errorFromProblem(403, problem, null);
  }
  return segments.map(encodeURIComponent).join('/');
}
