/**
 * One HTTP call to a sandbox agent with the gateway's delivery rules:
 * - only failures before the connection was established are retried (refused, unreachable,
 *   connect timeout); once a socket is connected, or a pooled socket was reused, the request may
 *   have reached the agent and is never sent again;
 * - an overall deadline covers connecting, queueing in the agent and the whole response;
 * - any transport error (including the deadline) drops the address's connection pool.
 */
import http from 'node:http';
import type { Socket } from 'node:net';
import type { Readable } from 'node:stream';

import type { AgentPool } from './agent-pool.js';
import type { CancelSignal } from './types.js';

/** A transport failure: nothing usable came back from the agent. */
export class AgentTransportError extends Error {
  /** True when the request certainly never reached the agent (safe to retry). */
  readonly beforeConnect: boolean;
  /** True when the overall deadline fired. */
  readonly deadline: boolean;

  constructor(message: string, opts: { beforeConnect: boolean; deadline?: boolean; cause?: unknown }) {
    super(message, { cause: opts.cause });
    this.name = 'AgentTransportError';
    this.beforeConnect = opts.beforeConnect;
    this.deadline = opts.deadline ?? false;
  }
}

/** One request to an agent. */
export interface AgentRequest {
  method: 'GET' | 'POST' | 'PUT';
  path: string;
  token: string;
  body?: Buffer;
  contentType?: string;
}

/** Delivery settings of a call. */
export interface DeliveryOptions {
  /** Re-read on every attempt: the informer may have a new pod IP after a failed connect. */
  address: () => string;
  connectTimeoutMs: number;
  retries: number;
  /** Absolute deadline (epoch ms) of the whole call including the response body. */
  deadlineAt: number;
  signal?: CancelSignal;
  /** Backoff between connect attempts. */
  retryDelayMs?: number;
}

/** A response whose body the caller must consume or destroy; `done()` ends the deadline timer. */
export interface AgentResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Readable;
}

const CONNECT_ERRORS = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL', 'ETIMEDOUT']);

/** Sends a request with connect-only retries; rejects with AgentTransportError on transport failure. */
export async function sendToAgent(
  pool: AgentPool,
  req: AgentRequest,
  opts: DeliveryOptions,
): Promise<AgentResponse> {
  for (let attempt = 0; ; attempt++) {
    const address = opts.address();
    try {
      return await attemptOnce(pool, address, req, opts);
    } catch (err) {
      if (err instanceof AgentTransportError) pool.drop(address);
      const retryable = err instanceof AgentTransportError && err.beforeConnect && !err.deadline;
      if (!retryable || attempt >= opts.retries || opts.signal?.aborted) throw err;
      const delay = (opts.retryDelayMs ?? 100) * 2 ** attempt;
      if (Date.now() + delay >= opts.deadlineAt) throw err;
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}

function splitAddress(address: string): { host: string; port: number } {
  const i = address.lastIndexOf(':');
  return { host: address.slice(0, i).replace(/^\[|\]$/g, ''), port: Number(address.slice(i + 1)) };
}

function attemptOnce(
  pool: AgentPool,
  address: string,
  r: AgentRequest,
  opts: DeliveryOptions,
): Promise<AgentResponse> {
  return new Promise((resolve, reject) => {
    const { host, port } = splitAddress(address);
    const headers: http.OutgoingHttpHeaders = {
      authorization: `Bearer ${r.token}`,
      accept: 'application/json',
    };
    if (r.body) {
      headers['content-type'] = r.contentType ?? 'application/json';
      headers['content-length'] = r.body.length;
    }
    const req = http.request({
      host,
      port,
      method: r.method,
      path: r.path,
      headers,
      agent: pool.get(address),
    });
    const call = new CallState(req, opts, reject);
    req.on('socket', (socket) => call.onSocket(socket));
    req.on('error', (err) => call.fail(err));
    req.on('response', (res) => {
      call.connected = true;
      res.on('error', (err) => call.fail(err));
      res.on('close', () => call.finish());
      resolve({ status: res.statusCode ?? 0, headers: res.headers, body: res });
    });
    req.end(r.body);
  });
}

/** Timers and connection state of one attempt. */
class CallState {
  connected = false;
  private connectTimer: NodeJS.Timeout | undefined;
  private readonly deadlineTimer: NodeJS.Timeout;
  private settled = false;
  private readonly onAbort = (): void => this.destroy('the caller went away', false);

  constructor(
    private readonly req: http.ClientRequest,
    private readonly opts: DeliveryOptions,
    private readonly reject: (err: Error) => void,
  ) {
    const remaining = Math.max(0, opts.deadlineAt - Date.now());
    this.deadlineTimer = setTimeout(() => this.destroy('deadline exceeded', true), remaining);
    opts.signal?.addEventListener('abort', this.onAbort, { once: true });
  }

  onSocket(socket: Socket): void {
    if (!socket.connecting) {
      this.connected = true; // a reused keep-alive socket: the request may be delivered
      return;
    }
    this.connectTimer = setTimeout(
      () => this.destroy('connect timeout', false, true),
      this.opts.connectTimeoutMs,
    );
    socket.once('connect', () => {
      this.connected = true;
      clearTimeout(this.connectTimer);
    });
  }

  fail(err: Error): void {
    if (err instanceof AgentTransportError) return this.settle(err);
    const code = (err as NodeJS.ErrnoException).code ?? '';
    const beforeConnect = !this.connected && CONNECT_ERRORS.has(code);
    this.settle(
      new AgentTransportError(`agent unreachable: ${code || err.message}`, { beforeConnect, cause: err }),
    );
  }

  finish(): void {
    this.cleanup();
  }

  private destroy(message: string, deadline: boolean, connectTimeout = false): void {
    const err = new AgentTransportError(message, {
      beforeConnect: connectTimeout && !this.connected,
      deadline,
    });
    this.req.destroy(err);
    this.settle(err);
  }

  private settle(err: AgentTransportError): void {
    this.cleanup();
    if (this.settled) return;
    this.settled = true;
    this.reject(err);
  }

  private cleanup(): void {
    clearTimeout(this.connectTimer);
    clearTimeout(this.deadlineTimer);
    this.opts.signal?.removeEventListener('abort', this.onAbort);
  }
}
