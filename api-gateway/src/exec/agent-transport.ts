/**
 * The Agent transport: HTTP to the in-pod agent at <status.podIP>:<agent port> with the session's
 * token, derived here from the master key (HMAC of namespace/name/uid), so no replica ever reads a
 * Secret. Agent problems are mapped to the gateway's problem types; transport failures to 502/504.
 */
import type { Readable } from 'node:stream';

import { deriveToken } from '@sandbox-platform/api';

import { ProblemError, slugOfType } from '../errors.js';
import type { ExecTarget } from '../sessions/model.js';
import { AgentTransportError, sendToAgent, type AgentRequest, type AgentResponse } from './agent-http.js';
import { AgentPool } from './agent-pool.js';
import { capStream } from './read-limited.js';
import type {
  CallOptions,
  ExecRequest,
  ExecResult,
  ExecTransport,
  FileDownload,
  WriteFileResult,
} from './types.js';

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
  /** Largest JSON response accepted from the agent (its output cap plus encoding overhead). */
  maxResponseBytes: number;
  /** Deadline of file calls (no command timeout applies to them). */
  fileTimeoutMs: number;
  lookup?: AddressLookup;
  pool?: AgentPool;
}

const PROBLEM_LIMIT = 64 * 1024;
/** Derived tokens kept per session uid (an HMAC per call is cheap, but this is the hot path). */
const TOKEN_CACHE_SIZE = 4096;

/** ExecTransport over HTTP to the sandbox agent. */
export class AgentTransport implements ExecTransport {
  readonly pool: AgentPool;
  private readonly tokens = new Map<string, string>();

  constructor(private readonly o: AgentTransportOptions) {
    if (o.masterKey.length === 0) throw new Error('AgentTransport: a master key is required');
    this.pool = o.pool ?? new AgentPool();
  }

  async exec(target: ExecTarget, req: ExecRequest, opts: CallOptions = {}): Promise<ExecResult> {
    const deadlineAt = Date.now() + req.timeoutSeconds * 1000 + this.o.deadlineMarginMs;
    const res = await this.send(target, jsonRequest('/v1/exec', req), deadlineAt, opts);
    await this.expectOk(res, target, deadlineAt);
    const body = await this.read(res, this.o.maxResponseBytes, target, deadlineAt);
    return JSON.parse(body.toString('utf8')) as ExecResult;
  }

  async execStream(target: ExecTarget, req: ExecRequest, opts: CallOptions = {}): Promise<Readable> {
    const deadlineAt = Date.now() + req.timeoutSeconds * 1000 + this.o.deadlineMarginMs;
    const res = await this.send(target, jsonRequest('/v1/exec/stream', req), deadlineAt, opts);
    await this.expectOk(res, target, deadlineAt);
    return res.body;
  }

  async writeFile(
    target: ExecTarget,
    path: string,
    data: Buffer,
    opts: CallOptions = {},
  ): Promise<WriteFileResult> {
    const deadlineAt = Date.now() + this.o.fileTimeoutMs;
    const req: AgentRequest = {
      method: 'PUT',
      path: filePath(path),
      token: '',
      body: data,
      contentType: 'application/octet-stream',
    };
    const res = await this.send(target, req, deadlineAt, opts);
    await this.expectOk(res, target, deadlineAt);
    const body = await this.read(res, PROBLEM_LIMIT, target, deadlineAt);
    return JSON.parse(body.toString('utf8')) as WriteFileResult;
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
    return { body: length === undefined ? capStream(res.body, maxBytes) : res.body, size: length };
  }

  /** Destroys every pooled connection (shutdown). */
  close(): void {
    this.pool.close();
  }

  private address(target: ExecTarget): string {
    const ip = this.o.lookup?.(target) ?? target.podIP;
    return ip.includes(':') ? `[${ip}]:${this.o.port}` : `${ip}:${this.o.port}`;
  }

  private async send(
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
        },
      );
    } catch (err) {
      throw transportProblem(err);
    }
  }

  /** The session's token: derived from namespace/name/uid, so a re-created session gets a new one. */
  private token(target: ExecTarget): string {
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

  private async read(
    res: AgentResponse,
    limit: number,
    target: ExecTarget,
    deadlineAt: number,
  ): Promise<Buffer> {
    try {
      return await res.read(limit);
    } catch (err) {
      if (err instanceof ProblemError) throw err;
      // The body broke off: a transport failure; drop the pool like any other.
      this.pool.drop(this.address(target));
      const deadline = Date.now() >= deadlineAt;
      throw transportProblem(
        new AgentTransportError('agent response broke off', { beforeConnect: false, deadline, cause: err }),
      );
    }
  }

  /** Maps a non-2xx agent answer to a gateway problem (the body is consumed). */
  private async expectOk(res: AgentResponse, target: ExecTarget, deadlineAt: number): Promise<void> {
    if (res.status >= 200 && res.status < 300) return;
    const text = (await this.read(res, PROBLEM_LIMIT, target, deadlineAt)).toString('utf8');
    throw agentProblem(res.status, text);
  }
}

function jsonRequest(path: string, req: ExecRequest): AgentRequest {
  return { method: 'POST', path, token: '', body: Buffer.from(JSON.stringify(req)) };
}

/** `/v1/files/<path>` with each segment escaped (the path was validated by the route). */
function filePath(path: string): string {
  return '/v1/files/' + path.split('/').map(encodeURIComponent).join('/');
}

function transportProblem(err: unknown): unknown {
  if (!(err instanceof AgentTransportError)) return err;
  if (err.deadline)
    return new ProblemError('upstream-timeout', 'the sandbox did not answer within the deadline', {
      cause: err,
    });
  return new ProblemError('upstream-error', 'the sandbox agent could not be reached', {
    cause: err,
    retryAfterSeconds: 1,
  });
}

/** Agent problem slugs passed through as they are (they are about the caller's request). */
const PASS_THROUGH = new Set([
  'invalid-request',
  'payload-too-large',
  'path-forbidden',
  'not-found',
  'shell-unavailable',
]);

/** Maps an agent error response to a gateway problem. */
export function agentProblem(status: number, text: string): ProblemError {
  let body: { type?: unknown; detail?: unknown } = {};
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    // not problem+json: handled as a generic upstream error below
  }
  const slug = slugOfType(body.type);
  const detail = typeof body.detail === 'string' ? body.detail : undefined;
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
