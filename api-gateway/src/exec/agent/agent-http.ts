/**
 * One HTTP call to a sandbox agent with the gateway's delivery rules:
 * - only failures before the connection was established are retried (refused, unreachable,
 *   connect timeout); once a socket is connected, or a pooled socket was reused, the request may
 *   have reached the agent and is never sent again;
 * - an overall deadline covers connecting, queueing in the agent and the whole response;
 * - any transport error (including the deadline) drops the address's connection pool; a call
 *   the gateway's own caller ended (it went away, its upload broke off or failed a check) closes
 *   only its own connection: the agent's other calls go on.
 * The HTTP/1.1 framing is agent-wire.ts (a strict parser: the agent's answers are untrusted).
 */
import type { Socket } from 'node:net';
import { Readable } from 'node:stream';

import { isProblemError } from '../../errors.js';
import type { CpuMeter } from '../../limits/cpu-meter.js';
import type { AgentCallTracing, BodyBrokeOff, TraceContext } from '../../tracing/tracing-config.js';
import type { AgentConn, AgentPool, ConnUser, HostPool } from './agent-pool.js';
import {
  AgentProtocolError,
  ResponseParser,
  requestHead,
  type ResponseSink,
  type WireRequest,
} from './agent-wire.js';
import type { BodyReservation } from './answer-reservation.js';
import type { CancelSignal } from '../types.js';

/** A transport failure: nothing usable came back from the agent. */
export class AgentTransportError extends Error {
  /** True when the request certainly never reached the agent (safe to retry). */
  readonly beforeConnect: boolean;
  /** True when the overall deadline fired. */
  readonly deadline: boolean;
  /**
   * True when the call was cancelled because the gateway's own caller went away: it disconnected,
   * or its request body (an upload, streamed stdin) broke off (a reset, node's request timeout).
   */
  readonly callerGone: boolean;
  /**
   * True when the caller's side ended the call, not the agent: it went away (callerGone), or its
   * request body failed a check (over the size limit, a bad stdin line). The agent's connections
   * are fine: its pool is kept.
   */
  readonly byCaller: boolean;

  constructor(
    message: string,
    opts: {
      beforeConnect: boolean;
      deadline?: boolean;
      callerGone?: boolean;
      byCaller?: boolean;
      cause?: unknown;
    },
  ) {
    super(message, { cause: opts.cause });
    this.name = 'AgentTransportError';
    this.beforeConnect = opts.beforeConnect;
    this.deadline = opts.deadline ?? false;
    this.callerGone = opts.callerGone ?? false;
    this.byCaller = this.callerGone || (opts.byCaller ?? false);
  }
}

/**
 * The failure of a call whose request body (the caller's upload or stdin) failed: a check of the
 * caller's (a problem: too large, a bad line) or the caller's connection broke off.
 */
function bodyFailure(err: Error): AgentTransportError {
  return new AgentTransportError(`the request body failed: ${err.message}`, {
    beforeConnect: false,
    byCaller: true,
    callerGone: !isProblemError(err),
    cause: err,
  });
}

/** One request to an agent. */
export type AgentRequest = WireRequest;

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
  /** Charged with the CPU spent parsing the answer; reading pauses while the caller is in debt. */
  meter?: CpuMeter;
  /** Tracing on, under a request's trace context: the call runs in a child span and sends its traceparent (tracing/tracing.ts). */
  trace?: { tracing: AgentCallTracing; parent: TraceContext };
}

/** Errors that prove the request never left the gateway (safe to retry). */
const CONNECT_ERRORS = new Set([
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'ETIMEDOUT',
  'EPOOLDROPPED',
]);

/** Sends a request with connect-only retries; rejects with AgentTransportError on transport failure. */
export function sendToAgent(
  pool: AgentPool,
  req: AgentRequest,
  opts: DeliveryOptions,
): Promise<AgentResponse> {
  return opts.trace ? traced(pool, req, opts.trace, { ...opts, trace: undefined }) : deliver(pool, req, opts);
}

async function deliver(pool: AgentPool, req: AgentRequest, opts: DeliveryOptions): Promise<AgentResponse> {
  for (let attempt = 0; ; attempt++) {
    const address = opts.address();
    try {
      return await attemptOnce(pool.get(address), address, req, opts);
    } catch (err) {
      if (stalesAddress(err)) pool.drop(address);
      const retryable = err instanceof AgentTransportError && err.beforeConnect && !err.deadline;
      if (!retryable || attempt >= opts.retries || opts.signal?.aborted) throw err;
      const delay = (opts.retryDelayMs ?? 100) * 2 ** attempt;
      if (Date.now() + delay >= opts.deadlineAt) throw err;
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}

/** The call in the tracer's span, its traceparent sent (tracing/tracing.ts). */
function traced(
  pool: AgentPool,
  req: AgentRequest,
  trace: { tracing: AgentCallTracing; parent: TraceContext },
  untraced: DeliveryOptions,
): Promise<AgentResponse> {
  return trace.tracing.agentCall(trace.parent, req.method, req.path, (traceparent) =>
    sendToAgent(pool, traceparent ? { ...req, traceparent } : req, untraced),
  );
}

function attemptOnce(
  host: HostPool,
  address: string,
  req: AgentRequest,
  opts: DeliveryOptions,
): Promise<AgentResponse> {
  return new Promise((resolve, reject) => new Call(host, address, req, opts).start(resolve, reject));
}

/** The answer's body is larger than the call accepts (declared, or as it arrived). */
export class AgentAnswerTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`the agent's answer exceeds ${limit} bytes`);
    this.name = 'AgentAnswerTooLargeError';
  }
}

/** The shared budget of buffered answer bytes is used up: the answer was not kept. */
export class AgentBudgetError extends Error {
  constructor() {
    super('the gateway holds too many large answers right now');
    this.name = 'AgentBudgetError';
  }
}

/** First allocation of a body whose length is not declared. */
const INITIAL_BODY_BYTES = 16 * 1024;
/** Body bytes kept before anyone asked for them; past this the connection is paused until they do. */
const UNCLAIMED_BYTES = 256 * 1024;

/**
 * An agent's answer. Its body is either read whole (`read`, no stream: the exec hot path) or
 * streamed (`body`, with backpressure on the connection); the first use decides.
 *
 * Read whole, the body is kept as at most one view of a socket read (the usual single-read
 * answer: no copy) or one contiguous buffer it is copied into, growing by doubling and never past
 * the limit: memory per call is bounded by the limit whatever the chunking (keeping every piece
 * as its own Buffer cost 1.58 GB for 12 MB of 1-byte chunks).
 */
export class AgentResponse {
  /** The body so far: one view of a socket read, or `store` (a copy) once a second piece came. */
  private first: Buffer | undefined;
  private store: Buffer | undefined;
  private size = 0;
  private ended = false;
  private error: Error | undefined;
  private reader: { limit: number; resolve: (b: Buffer) => void; reject: (e: Error) => void } | undefined;
  private stream: Readable | undefined;
  /** Where the body's memory is taken from (answer-reservation.ts). */
  private reservation: BodyReservation | undefined;
  /** The Server-Timing trailer of a chunked answer (tracing: the agent's timings of a streamed exec). */
  private timingTrailer: string | undefined;
  /** Told once when the body ended (with the trailer) or did not (tracing/tracing.ts). */
  private doneListener: ((timing: string | undefined, brokeOff?: BodyBrokeOff) => void) | undefined;
  /** Why the body did not end whole, once known. */
  private brokeOff: BodyBrokeOff | undefined;

  constructor(
    readonly status: number,
    readonly headers: Record<string, string>,
    private readonly call: Call,
  ) {}

  /** The Content-Length the agent declared, if any. */
  get declaredLength(): number | undefined {
    const cl = this.headers['content-length'];
    return cl === undefined ? undefined : Number(cl);
  }

  /**
   * The whole body; AgentAnswerTooLargeError past `limit` bytes, AgentBudgetError when
   * `reservation` cannot cover it as it arrives (the connection is then closed).
   */
  read(limit: number, reservation?: BodyReservation): Promise<Buffer> {
    if (this.stream || this.reader) return Promise.reject(new Error('the body is already being read'));
    if (this.size > limit || (this.declaredLength ?? 0) > limit) return Promise.reject(this.tooLarge(limit));
    this.reservation = reservation;
    if (!this.reserve()) return Promise.reject(this.overBudget());
    if (this.error) return Promise.reject(this.error);
    if (this.ended) return Promise.resolve(this.whole());
    return new Promise((resolve, reject) => {
      this.reader = { limit, resolve, reject };
      this.call.resume();
    });
  }

  /** The body as a stream; destroying it before its end closes the connection. */
  get body(): Readable {
    if (this.stream) return this.stream;
    const stream = new Readable({
      read: () => this.call.resume(),
      destroy: (err, cb) => {
        this.call.abandon();
        cb(err);
      },
    });
    this.stream = stream;
    const buffered = this.size > 0 ? this.whole() : undefined;
    if (buffered && !stream.push(buffered)) this.call.pause();
    if (this.error) stream.destroy(this.error);
    else if (this.ended) stream.push(null);
    return stream;
  }

  /** A piece of the body (from the call). */
  push(chunk: Buffer): void {
    if (this.stream) {
      if (!this.stream.push(chunk)) this.call.pause();
      return;
    }
    this.size += chunk.length;
    if (this.reader && this.size > this.reader.limit) {
      this.reader.reject(this.tooLarge(this.reader.limit));
      this.reader = undefined;
      return;
    }
    if (this.reader && !this.reserve()) {
      this.reader.reject(this.overBudget());
      this.reader = undefined;
      return;
    }
    this.append(chunk);
    if (!this.reader && this.size > UNCLAIMED_BYTES) this.call.pause();
  }

  /**
   * Calls `listener` once: when the body ended (with its Server-Timing trailer, if any), or with
   * why it did not (broke off, or abandoned by the consumer: the caller went away).
   */
  onceDone(listener: (timing: string | undefined, brokeOff?: BodyBrokeOff) => void): void {
    if (this.ended) listener(this.timingTrailer);
    else if (this.brokeOff) listener(undefined, this.brokeOff);
    else this.doneListener = listener;
  }

  /** The consumer stopped reading before the end (from the call): the caller went away. */
  abandoned(): void {
    this.settle({ error: new Error('the caller stopped reading the answer'), callerGone: true });
  }

  private settle(brokeOff: BodyBrokeOff): void {
    if (this.ended || this.brokeOff) return;
    this.brokeOff = brokeOff;
    this.doneListener?.(undefined, brokeOff);
    this.doneListener = undefined;
  }

  /** A trailer field (from the call); only Server-Timing is kept, once, bounded. */
  trailer(name: string, value: string): void {
    if (name === 'server-timing' && this.timingTrailer === undefined)
      this.timingTrailer = value.slice(0, 1024);
  }

  /** The body is complete (from the call). */
  end(): void {
    this.doneListener?.(this.timingTrailer);
    this.doneListener = undefined;
    this.ended = true;
    if (this.stream) this.stream.push(null);
    else if (this.reader) this.reader.resolve(this.whole());
  }

  /** The body broke off (from the call). */
  fail(err: Error): void {
    this.settle({ error: err, callerGone: err instanceof AgentTransportError && err.callerGone });
    this.error = err;
    if (this.stream) this.stream.destroy(err);
    else if (this.reader) this.reader.reject(err);
  }

  /** Covers the body so far; false when the reservation cannot. */
  private reserve(): boolean {
    return this.reservation?.cover(this.size) ?? true;
  }

  private overBudget(): AgentBudgetError {
    this.call.abandon();
    this.first = undefined;
    this.store = undefined;
    return new AgentBudgetError();
  }

  /** Keeps a piece: the first as it is, later ones copied into one growing buffer. */
  private append(chunk: Buffer): void {
    if (this.size === chunk.length) {
      this.first = chunk;
      return;
    }
    const have = this.size - chunk.length;
    if (!this.store || this.store.length < this.size) {
      // A declared length is trusted for the allocation only once read() checked it against a limit.
      const declared = this.reader ? (this.declaredLength ?? 0) : 0;
      const limit = this.reader?.limit ?? Infinity;
      const wanted = Math.max(this.size, declared, have * 2, INITIAL_BODY_BYTES);
      const grown = Buffer.allocUnsafe(Math.min(wanted, Math.max(limit, this.size)));
      (this.store ?? this.first!).copy(grown, 0, 0, have);
      this.store = grown;
      this.first = undefined;
    }
    chunk.copy(this.store, have);
  }

  private whole(): Buffer {
    const body = this.store ? this.store.subarray(0, this.size) : (this.first ?? Buffer.alloc(0));
    this.first = undefined;
    this.store = undefined;
    return body;
  }

  private tooLarge(limit: number): AgentAnswerTooLargeError {
    this.call.abandon();
    this.first = undefined;
    this.store = undefined;
    return new AgentAnswerTooLargeError(limit);
  }
}

/** Largest request body written together with its head in one buffer (larger: corked writes). */
const COALESCE_BYTES = 64 * 1024;

/** One attempt: a connection from the pool, the request, the parsed answer, the timers. */
class Call implements ConnUser, ResponseSink {
  private connected = false;
  /** The promise of the attempt was settled (answer head or error). */
  private settled = false;
  /** Nothing more will happen on the connection for this call. */
  private finished = false;
  private reusable = false;
  private conn: AgentConn | undefined;
  private response: AgentResponse | undefined;
  private readonly parser: ResponseParser;
  private connectTimer: NodeJS.Timeout | undefined;
  private deadlineTimer: NodeJS.Timeout | undefined;
  private stopWaiting: (() => void) | undefined;
  /** The consumer asked for a pause (backpressure); a throttle pauses too, on its own timer. */
  private consumerPaused = false;
  private throttle: NodeJS.Timeout | undefined;
  /** A request body stream is still being copied to the connection. */
  private bodyPending = false;
  private stopBody: (() => void) | undefined;
  private readonly onAbort = (): void =>
    this.fail(new AgentTransportError('the caller went away', { beforeConnect: false, callerGone: true }));
  private resolve: (r: AgentResponse) => void = () => undefined;
  private reject: (err: Error) => void = () => undefined;

  constructor(
    private readonly host: HostPool,
    private readonly address: string,
    private readonly req: AgentRequest,
    private readonly opts: DeliveryOptions,
  ) {
    this.parser = new ResponseParser(this, req.method);
  }

  /** Sends the request; `resolve` gets the answer once its head is parsed. */
  start(resolve: (r: AgentResponse) => void, reject: (err: Error) => void): void {
    this.resolve = resolve;
    this.reject = reject;
    const remaining = Math.max(0, this.opts.deadlineAt - Date.now());
    this.deadlineTimer = setTimeout(() => this.destroy('deadline exceeded', true), remaining);
    this.opts.signal?.addEventListener('abort', this.onAbort, { once: true });
    if (this.opts.signal?.aborted) return this.onAbort();
    this.acquire();
  }

  private acquire(): void {
    let conn: AgentConn | undefined;
    try {
      conn = this.host.take();
    } catch (err) {
      return this.fail(err as Error);
    }
    if (!conn) {
      this.stopWaiting = this.host.wait((err) => {
        this.stopWaiting = undefined;
        if (this.finished) return;
        if (err) this.fail(err);
        else this.acquire();
      });
      return;
    }
    this.conn = conn;
    conn.user = this;
    const socket = conn.socket;
    if (!socket.connecting) {
      this.connected = true; // a reused keep-alive socket: the request may be delivered
    } else {
      this.connectTimer = setTimeout(
        () => this.destroy('connect timeout', false, true),
        this.opts.connectTimeoutMs,
      );
      socket.once('connect', () => {
        this.connected = true;
        clearTimeout(this.connectTimer);
      });
    }
    this.writeRequest(socket);
  }

  private writeRequest(socket: Socket): void {
    const r = this.req;
    const head = requestHead(this.address, r);
    if (r.bodyStream) {
      socket.write(head, 'latin1');
      // Not one byte of the stream is taken before the connection is up: a failed connect is
      // retried with the stream untouched.
      if (socket.connecting) socket.once('connect', () => this.sendBody(socket, r.bodyStream!));
      else this.sendBody(socket, r.bodyStream);
    } else if (!r.body || r.body.length === 0) {
      socket.write(head, 'latin1');
    } else if (r.body.length <= COALESCE_BYTES) {
      socket.write(Buffer.concat([Buffer.from(head, 'latin1'), r.body])); // one segment
    } else {
      socket.cork();
      socket.write(head, 'latin1');
      socket.write(r.body);
      socket.uncork();
    }
  }

  /**
   * Copies a request body stream to the connection with backpressure: the stream is paused while
   * the socket's buffer is full, so an upload is never held whole in the gateway. Without a known
   * length the body is sent chunked.
   */
  private sendBody(socket: Socket, stream: Readable): void {
    if (this.finished) return;
    const chunked = this.req.bodyLength === undefined;
    const resume = (): void => void stream.resume();
    const onData = (c: Buffer): void => {
      let ok: boolean;
      if (chunked) {
        socket.cork();
        socket.write(`${c.length.toString(16)}\r\n`, 'latin1');
        socket.write(c);
        ok = socket.write('\r\n', 'latin1');
        socket.uncork();
      } else {
        ok = socket.write(c);
      }
      if (!ok) {
        stream.pause();
        socket.once('drain', resume);
      }
    };
    const onEnd = (): void => {
      stop();
      this.bodyPending = false;
      if (chunked) socket.write('0\r\n\r\n', 'latin1');
    };
    // The body is the caller's: its failures are the caller's, never the agent's.
    const onError = (err: Error): void => this.fail(bodyFailure(err));
    // 'close' without 'end': the client's upload broke off (a reset, node's request timeout).
    const onClose = (): void => {
      if (this.bodyPending) this.fail(bodyFailure(stream.errored ?? new Error('it broke off')));
    };
    const stop = (): void => {
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('error', onError);
      stream.off('close', onClose);
      socket.off('drain', resume);
    };
    this.bodyPending = true;
    this.stopBody = stop;
    stream.on('data', onData);
    stream.once('end', onEnd);
    stream.once('error', onError);
    stream.once('close', onClose);
  }

  // ConnUser: the connection's events while this call owns it.

  onData(data: Buffer): void {
    if (this.finished) return;
    const started = this.opts.meter ? performance.now() : 0;
    try {
      this.parser.feed(data);
    } catch (err) {
      // A complete answer followed by stray bytes: the answer stands, the connection goes.
      if (this.parser.done) return void this.conn?.socket.destroy();
      return this.fail(err as Error);
    }
    if (this.opts.meter) {
      const wait = this.opts.meter.charge(performance.now() - started);
      if (!this.parser.done) this.throttleFor(wait);
    }
    if (this.parser.done) this.complete();
  }

  /** Stops reading for `ms` (the caller is over its CPU share); 0: nothing to do. */
  private throttleFor(ms: number): void {
    if (ms <= 0 || this.throttle || this.finished) return;
    this.conn?.socket.pause();
    this.throttle = setTimeout(() => {
      this.throttle = undefined;
      if (!this.finished && !this.consumerPaused) this.conn?.socket.resume();
    }, ms);
  }

  onError(err: Error): void {
    this.fail(err);
  }

  onClose(): void {
    if (this.finished) return;
    if (this.parser.close()) return this.complete();
    this.fail(
      Object.assign(new Error('the connection closed before the answer was complete'), {
        code: 'ECONNRESET',
      }),
    );
  }

  // ResponseSink: the parsed answer.

  onHead(status: number, headers: Record<string, string>): void {
    this.connected = true;
    this.response = new AgentResponse(status, headers, this);
    this.settled = true;
    this.resolve(this.response);
  }

  onBody(chunk: Buffer): void {
    this.response!.push(chunk);
  }

  onEnd(reusable: boolean): void {
    this.reusable = reusable;
  }

  onTrailer(name: string, value: string): void {
    this.response!.trailer(name, value);
  }

  // Backpressure and early ends from the response's consumer.

  pause(): void {
    this.consumerPaused = true;
    if (!this.finished) this.conn?.socket.pause();
  }

  resume(): void {
    this.consumerPaused = false;
    if (!this.finished && !this.throttle) this.conn?.socket.resume();
  }

  /** The consumer stopped reading before the end: the connection cannot be reused. */
  abandon(): void {
    if (this.finished) return;
    this.finished = true;
    this.cleanup();
    this.conn?.socket.destroy();
    // Tracing waits for the end of a streamed body: tell it there will be none.
    this.response?.abandoned();
  }

  private complete(): void {
    if (this.finished) return;
    this.finished = true;
    this.cleanup();
    const conn = this.conn;
    if (conn && conn.user === this) {
      // An answer that came before the whole request body was sent leaves the connection unusable.
      if (this.reusable && !this.bodyPending) this.host.release(conn);
      else conn.socket.destroy();
    }
    this.response!.end();
  }

  private destroy(message: string, deadline: boolean, connectTimeout = false): void {
    this.fail(
      new AgentTransportError(message, { beforeConnect: connectTimeout && !this.connected, deadline }),
    );
  }

  private fail(err: Error): void {
    if (this.finished) return;
    this.finished = true;
    this.cleanup();
    if (this.conn) {
      this.conn.user = undefined;
      this.conn.socket.destroy();
    }
    const failure =
      err instanceof AgentTransportError
        ? err
        : new AgentTransportError(`agent unreachable: ${errCode(err) || err.message}`, {
            beforeConnect: !this.connected && CONNECT_ERRORS.has(errCode(err)),
            cause: err,
          });
    if (!this.settled) {
      this.settled = true;
      this.reject(failure);
    } else {
      this.response?.fail(failure);
    }
  }

  private cleanup(): void {
    this.stopBody?.();
    clearTimeout(this.throttle);
    this.throttle = undefined;
    clearTimeout(this.connectTimer);
    clearTimeout(this.deadlineTimer);
    this.stopWaiting?.();
    this.opts.signal?.removeEventListener('abort', this.onAbort);
  }
}

/**
 * True for transport failures (refused, reset, timeout) that say the address may be stale. A
 * malformed answer is only that connection's problem (it is already destroyed), and so is a call
 * the caller ended (it went away, its upload broke off): dropping the pool would cut the agent's
 * other calls, which then answered 502 upstream-error for the caller's own timeout.
 */
function stalesAddress(err: unknown): boolean {
  return err instanceof AgentTransportError && !err.byCaller && !isProtocolFailure(err);
}

/** True when an error is, or was caused by, a malformed answer. */
export function isProtocolFailure(err: unknown): boolean {
  return protocolErrorIn(err) !== undefined;
}

/** The AgentProtocolError an error is or was caused by, if any. */
export function protocolErrorIn(err: unknown): AgentProtocolError | undefined {
  for (let e = err, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    if (e instanceof AgentProtocolError) return e;
  }
  return undefined;
}

function errCode(err: Error): string {
  return (err as NodeJS.ErrnoException).code ?? '';
}
