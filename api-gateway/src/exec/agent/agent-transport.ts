/**
 * The Agent transport: HTTP to the in-pod agent at <status.podIP>:<agent port> with the session's
 * token, derived here from the master key (HMAC of namespace/name/uid), so no replica ever reads a
 * Secret. Agent problems are mapped to the gateway's problem types; transport failures to 502/504.
 * Answers are untrusted: bounded in bytes (answerLimit), parsed with depth and member limits and
 * validated against the contract (agent-json.ts), streams guarded line by line (ndjson-guard.ts);
 * a violation is 502 `agent-answer-too-large` or `agent-protocol-error`.
 */
import { Readable } from 'node:stream';

import { NDJSON_CONTENT_TYPE, deriveToken } from '@sandbox-platform/api';

import { CallerGoneError, ProblemError, isProblemError, slugOfType } from '../../errors.js';
import { UNCOUNTED_BYTES } from '../../limits/byte-budget.js';
import type { ExecTarget } from '../../sessions/model.js';
import type { AgentAnswer, AgentCallTracing, TraceContext } from '../../tracing/tracing-config.js';
import {
  AgentAnswerTooLargeError,
  AgentBudgetError,
  AgentTransportError,
  isProtocolFailure,
  protocolErrorIn,
  sendToAgent,
  type AgentRequest,
  type AgentResponse,
} from './agent-http.js';
import {
  checkOutputCap,
  parseAgentJson,
  validateExecResult,
  validateProblem,
  validateWriteResult,
} from './agent-json.js';
import { AgentPool } from './agent-pool.js';
import { AgentProtocolError } from './agent-wire.js';
import { AnswerReservation } from './answer-reservation.js';
import { NdjsonGuard } from '../guards/ndjson-guard.js';
import { capStream } from '../read-limited.js';
import type {
  AnswerHold,
  CallOptions,
  ExecRequest,
  ExecResult,
  ExecTransport,
  FileDownload,
  UploadBody,
  WriteFileResult,
} from '../types.js';

/** Current pod IP of a session from the informer (may have changed since the call began). */
export type AddressLookup = (target: ExecTarget) => string | undefined;

/** Options of the Agent transport. */
export interface AgentTransportOptions {
  masterKey: Buffer;
  /** Agent port: the platform constant in production; tests point it at a local agent. */
  port: number;
  connectTimeoutMs: number;
  connectRetries: number;
  /** Added to timeoutSeconds for the overall deadline. */
  deadlineMarginMs: number;
  /**
   * The output cap per stream (stdout, stderr) the agent honours: answers claiming more are
   * refused, and the largest answer accepted follows from it (answerLimit).
   */
  maxOutputBytes: number;
  /** Deadline of file calls (no command timeout applies to them). */
  fileTimeoutMs: number;
  lookup?: AddressLookup;
  pool?: AgentPool;
  /** Tracing on: each call in a span, its traceparent sent to the agent (tracing/tracing.ts). */
  tracing?: AgentCallTracing;
}

const PROBLEM_LIMIT = 64 * 1024;
/** Longest agent problem detail passed on to the caller. */
const MAX_DETAIL_CHARS = 1024;

/**
 * Largest exec answer accepted for an output cap: two streams of JSON-escaped text (a byte is at
 * most 6 bytes escaped: \u0000) plus the other members. The same bound caps a streamed answer.
 */
export function answerLimit(maxOutputBytes: number): number {
  return maxOutputBytes * 12 + 64 * 1024;
}
/** Derived tokens kept per session uid (an HMAC per call is cheap, but this is the hot path). */
const TOKEN_CACHE_SIZE = 4096;

/** ExecTransport over HTTP to the sandbox agent. */
export class AgentTransport implements ExecTransport {
  readonly pool: AgentPool;
  private readonly tokens = new Map<string, string>();
  private readonly maxAnswerBytes: number;

  constructor(private readonly o: AgentTransportOptions) {
    if (o.masterKey.length === 0) throw new Error('AgentTransport: a master key is required');
    this.pool = o.pool ?? new AgentPool();
    this.maxAnswerBytes = answerLimit(o.maxOutputBytes);
  }

  async exec(target: ExecTarget, req: ExecRequest, opts: CallOptions = {}): Promise<ExecResult> {
    const deadlineAt = Date.now() + req.timeoutSeconds * 1000 + this.o.deadlineMarginMs;
    const res = await this.send(target, jsonRequest('/v1/exec', req), deadlineAt, opts);
    // (A 2xx takes no promise hop here: this is the hot path.)
    if (!isOk(res)) await this.expectOk(res, target, deadlineAt);
    const body = await this.read(res, this.maxAnswerBytes, {
      target,
      deadlineAt,
      ...(opts.hold ? { hold: opts.hold } : {}),
    });
    const started = opts.meter ? performance.now() : 0;
    try {
      return parsed(() => {
        const r = parseAgentJson(body, validateExecResult);
        checkOutputCap(r.stdout, r.stdoutEncoding, this.o.maxOutputBytes, 'stdout');
        checkOutputCap(r.stderr, r.stderrEncoding, this.o.maxOutputBytes, 'stderr');
        return r;
      });
    } finally {
      // Twice the parse: serializing the result for the caller costs about as much again. The
      // debt slows the key's next reads.
      if (opts.meter && body.length > UNCOUNTED_BYTES) opts.meter.charge(2 * (performance.now() - started));
    }
  }

  async execStream(target: ExecTarget, req: ExecRequest, opts: CallOptions = {}): Promise<Readable> {
    const deadlineAt = Date.now() + req.timeoutSeconds * 1000 + this.o.deadlineMarginMs;
    const request = opts.stdinLines
      ? ndjsonRequest('/v1/exec/stream', req, opts.stdinLines)
      : jsonRequest('/v1/exec/stream', req);
    const res = await this.send(target, request, deadlineAt, opts);
    await this.expectOk(res, target, deadlineAt);
    const guard = new NdjsonGuard(
      { maxBytes: this.maxAnswerBytes, maxOutputBytes: this.o.maxOutputBytes },
      opts.meter,
    );
    const upstream = res.body;
    upstream.on('error', (err) => guard.destroy(this.streamProblem(err, target)));
    // The guard failing (or the caller going away) closes the agent connection: the agent then
    // kills the command.
    // The answer over, stdin is not needed any more (a command may end before its stdin does).
    guard.on('close', () => {
      upstream.destroy();
      opts.stdinLines?.destroy();
    });
    return upstream.pipe(guard);
  }

  async writeFile(
    target: ExecTarget,
    path: string,
    data: UploadBody,
    opts: CallOptions = {},
  ): Promise<WriteFileResult> {
    const deadlineAt = Date.now() + this.o.fileTimeoutMs;
    const req: AgentRequest = {
      method: 'PUT',
      path: filePath(path),
      token: '',
      contentType: 'application/octet-stream',
      ...(Buffer.isBuffer(data)
        ? { body: data }
        : { bodyStream: data.stream, ...(data.size !== undefined ? { bodyLength: data.size } : {}) }),
    };
    const res = await this.send(target, req, deadlineAt, opts);
    await this.expectOk(res, target, deadlineAt);
    const body = await this.read(res, PROBLEM_LIMIT, { target, deadlineAt });
    return parsed(() => parseAgentJson(body, validateWriteResult));
  }

  async readFile(
    target: ExecTarget,
    path: string,
    maxBytes: number,
    opts: CallOptions = {},
  ): Promise<FileDownload> {
    const deadlineAt = Date.now() + this.o.fileTimeoutMs;
    const res = await this.send(target, { method: 'GET', path: filePath(path), token: '' }, deadlineAt, opts);
    await this.expectOk(res, target, deadlineAt);
    const length =
      res.headers['content-length'] === undefined ? undefined : Number(res.headers['content-length']);
    if (length !== undefined && length > maxBytes) {
      res.body.destroy();
      throw new ProblemError('payload-too-large', `the file is ${length} bytes; the limit is ${maxBytes}`);
    }
    // Capped even with a declared length (the parser holds the agent to it): one error mapping.
    const body = capStream(res.body, length ?? maxBytes, (err) => this.streamProblem(err, target));
    return { body, size: length };
  }

  /** Destroys every pooled connection (shutdown). */
  close(): void {
    this.pool.close();
  }

  /** `<pod IP>:<agent port>` of a session (also for the terminal's WebSocket). */
  address(target: ExecTarget): string {
    const ip = this.o.lookup?.(target) ?? target.podIP;
    return ip.includes(':') ? `[${ip}]:${this.o.port}` : `${ip}:${this.o.port}`;
  }

  /**
   * Runs a call to the agent that this transport does not send itself (the terminal's WebSocket
   * dial, agent-interactive.ts) as the transport's own calls run: under a request's trace context
   * (tracing on), in an `agent <method> <path>` span, a child of its span, `call` getting the
   * traceparent to send; without one, as it is.
   */
  traced<R extends AgentAnswer>(
    trace: TraceContext | undefined,
    method: string,
    path: string,
    call: (traceparent: string | undefined) => Promise<R>,
  ): Promise<R> {
    return this.o.tracing && trace ? this.o.tracing.agentCall(trace, method, path, call) : call(undefined);
  }

  /** Sends one request with the session's token (connect-only retries); maps transport failures. */
  async send(
    target: ExecTarget,
    req: AgentRequest,
    deadlineAt: number,
    opts: CallOptions,
  ): Promise<AgentResponse> {
    const token = this.token(target);
    try {
      return await sendToAgent(
        this.pool,
        { ...req, token },
        {
          address: () => this.address(target),
          connectTimeoutMs: this.o.connectTimeoutMs,
          retries: this.o.connectRetries,
          deadlineAt,
          ...(opts.signal ? { signal: opts.signal } : {}),
          ...(opts.meter ? { meter: opts.meter } : {}),
          ...(this.o.tracing && opts.trace ? { trace: { tracing: this.o.tracing, parent: opts.trace } } : {}),
        },
      );
    } catch (err) {
      // The upload's own failure (over the size limit, the client left) is the caller's answer.
      if (err instanceof AgentTransportError && isProblemError(err.cause)) throw err.cause;
      throw transportProblem(err);
    }
  }

  /**
   * The problem of a streamed answer that broke off (a transport failure drops the pool; the
   * caller's own failure does not).
   */
  streamProblem(err: Error, target: ExecTarget): Error {
    if (isProblemError(err)) return err;
    // The caller's own streamed stdin broke the call (a bad line): that problem is the answer.
    if (err instanceof AgentTransportError && isProblemError(err.cause)) return err.cause;
    const byCaller = err instanceof AgentTransportError && err.byCaller;
    if (!byCaller && !isProtocolFailure(err)) this.pool.drop(this.address(target));
    return transportProblem(err) as Error;
  }

  /** The session's token: derived from namespace/name/uid, so a re-created session gets a new one. */
  token(target: ExecTarget): string {
    const key = `${target.namespace}/${target.name}/${target.uid}`;
    let token = this.tokens.get(key);
    if (token === undefined) {
      token = deriveToken(this.o.masterKey, {
        namespace: target.namespace,
        name: target.name,
        uid: target.uid,
      });
      if (this.tokens.size >= TOKEN_CACHE_SIZE) this.tokens.clear();
      this.tokens.set(key, token);
    }
    return token;
  }

  /** The whole body of an answer, bounded; failures mapped to problems. */
  async read(
    res: AgentResponse,
    limit: number,
    call: { target: ExecTarget; deadlineAt: number; hold?: AnswerHold },
  ): Promise<Buffer> {
    const { target, deadlineAt } = call;
    try {
      return await res.read(limit, call.hold && new AnswerReservation(call.hold));
    } catch (err) {
      // These close only the call's own connection: the agent's other calls go on.
      if (err instanceof AgentBudgetError) throw overloaded();
      if (err instanceof AgentAnswerTooLargeError) {
        throw new ProblemError('agent-answer-too-large', `the sandbox agent's answer exceeds ${limit} bytes`);
      }
      const malformed = protocolErrorIn(err);
      if (malformed) throw protocolProblem(malformed);
      // The caller's side ended the call while the answer came (it went away, its upload failed):
      // not the agent's failure (the pool stays).
      if (err instanceof AgentTransportError && err.byCaller) {
        throw isProblemError(err.cause) ? err.cause : new CallerGoneError(err);
      }
      // The body broke off: a transport failure; drop the pool like any other.
      this.pool.drop(this.address(target));
      const deadline = Date.now() >= deadlineAt;
      throw transportProblem(
        new AgentTransportError('agent response broke off', { beforeConnect: false, deadline, cause: err }),
      );
    }
  }

  /** Maps a non-2xx agent answer to a gateway problem (the body is consumed). */
  async expectOk(res: AgentResponse, target: ExecTarget, deadlineAt: number): Promise<void> {
    if (isOk(res)) return;
    throw agentProblem(res.status, await this.read(res, PROBLEM_LIMIT, { target, deadlineAt }));
  }
}

/** A 2xx answer. */
function isOk(res: AgentResponse): boolean {
  return res.status >= 200 && res.status < 300;
}

function jsonRequest(path: string, req: ExecRequest): AgentRequest {
  return { method: 'POST', path, token: '', body: Buffer.from(JSON.stringify(req)) };
}

/**
 * A streamed exec request: the request as the first NDJSON line, then the caller's stdin lines as
 * they arrive (chunked, with backpressure). A stdin line that fails its check errors the stream:
 * the call fails with that problem and its agent connection is closed, so the agent stops the
 * command; so does the stream closing early (the caller went away).
 */
function ndjsonRequest(path: string, req: ExecRequest, stdinLines: Readable): AgentRequest {
  const first = Buffer.from(JSON.stringify(req) + '\n');
  async function* body(): AsyncGenerator<Buffer> {
    yield first;
    for await (const chunk of stdinLines) yield chunk as Buffer;
  }
  const bodyStream = Readable.from(body(), { objectMode: false });
  // While the body is sent, the call listens and fails with the error; once it is over (the answer
  // ended first, or it failed), a stdin stream that breaks off has nobody left to tell.
  bodyStream.on('error', () => undefined);
  // Destroyed by the call (it failed, or the caller left): the caller's stream goes too.
  bodyStream.once('close', () => {
    if (!stdinLines.destroyed && !stdinLines.readableEnded) stdinLines.destroy();
  });
  return { method: 'POST', path, token: '', contentType: NDJSON_CONTENT_TYPE, bodyStream };
}

/** `/v1/files/<path>` with each segment escaped (the path was validated by the route). */
function filePath(path: string): string {
  return '/v1/files/' + path.split('/').map(encodeURIComponent).join('/');
}

/**
 * Runs the parse of a complete answer; a malformed one is a protocol error. Its connection stays
 * pooled: the answer was well framed, only its content broke the contract.
 */
function parsed<T>(parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    if (err instanceof AgentProtocolError) throw protocolProblem(err);
    throw err;
  }
}

function transportProblem(err: unknown): unknown {
  if (!(err instanceof AgentTransportError)) return err;
  // The caller's own failure (it went away, its upload broke off): not an upstream error.
  if (err.callerGone) return new CallerGoneError(err);
  const malformed = protocolErrorIn(err);
  if (malformed) return protocolProblem(malformed);
  if (err.deadline)
    return new ProblemError('upstream-timeout', 'the sandbox did not answer within the deadline', {
      cause: err,
    });
  return new ProblemError('upstream-error', 'the sandbox agent could not be reached', {
    cause: err,
    retryAfterSeconds: 1,
  });
}

/** 503 while the gateway holds as many large answers as its budget allows. */
export function overloaded(): ProblemError {
  return new ProblemError('overloaded', 'the gateway holds too many large answers right now', {
    retryAfterSeconds: 1,
  });
}

/** A malformed answer: 502 with what rule it broke (never the answer's content). */
function protocolProblem(err: AgentProtocolError): ProblemError {
  return new ProblemError('agent-protocol-error', `the sandbox agent's answer is malformed: ${err.message}`, {
    cause: err,
  });
}

/** Agent problem slugs passed through as they are (they are about the caller's request). */
const PASS_THROUGH = new Set([
  'invalid-request',
  'payload-too-large',
  'path-forbidden',
  'not-found',
  'shell-unavailable',
  // Background processes and the terminal (ADR 0018).
  'process-not-found',
  'signal-not-allowed',
  'process-running',
  'process-exited',
  'too-many-processes',
  'too-many-terminals',
  'pty-unavailable',
  // The code interpreter and file watching (ADR 0033).
  'code-unavailable',
  'context-not-found',
  'too-many-contexts',
  'context-busy',
  'watch-unavailable',
]);

/** Maps an agent error response to a gateway problem. */
export function agentProblem(status: number, answer: Buffer): ProblemError {
  let body: { type?: unknown; detail?: unknown } = {};
  try {
    body = parseAgentJson(answer, validateProblem);
  } catch {
    // not problem+json: handled as a generic upstream error below
  }
  const slug = slugOfType(body.type);
  const detail = typeof body.detail === 'string' ? body.detail.slice(0, MAX_DETAIL_CHARS) : undefined;
  if (slug && PASS_THROUGH.has(slug)) {
    return new ProblemError(slug, detail, slug === 'shell-unavailable' ? { retryAfterSeconds: 1 } : {});
  }
  if (status === 401) {
    // The token derived from the session's uid was refused: the pod belongs to an older session of
    // the same name, or the operator has not written the Secret yet. Retrying shortly may succeed.
    return new ProblemError('upstream-error', 'the sandbox agent refused the session token', {
      retryAfterSeconds: 1,
    });
  }
  return new ProblemError('upstream-error', `the sandbox agent answered HTTP ${status}`);
}
