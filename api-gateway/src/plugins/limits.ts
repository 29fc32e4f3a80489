/**
 * What one tenant may take from a gateway replica that serves all of them (docs/adr/0009):
 * - load shedding (@fastify/under-pressure): while the event loop lags or memory is above its
 *   threshold every non-public request is answered 503 `overloaded` with Retry-After, before
 *   authentication, so a saturated replica sheds load instead of timing out everyone;
 * - per API key, requests per second and requests in flight (until their response is done, so
 *   unread answers count), checked before the body is read: 429 `rate-limited` /
 *   `concurrency-limited` with Retry-After;
 * - large buffered responses (64 KiB and up) take their size from the shared byte budget until
 *   they are written (503 `overloaded` when it is used up) and must be read by the client within
 *   the write timeout, else the connection is closed: unread answers cannot pile up.
 * Health and the OpenAPI document (public routes) are never limited; /metrics has its own port.
 */
import underPressure from '@fastify/under-pressure';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

import { ProblemError } from '../errors.js';
import type { ServerResponse } from 'node:http';

import type { AnswerHold } from '../exec/types.js';
import { UNCOUNTED_BYTES, type ByteBudget } from '../limits/byte-budget.js';
import { CpuMeters } from '../limits/cpu-meter.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Budget of large answers held at once. */
    answerBudget: ByteBudget;
    /** Each API key's share of the CPU for reading agent answers. */
    cpuMeters: CpuMeters;
  }
}

/** Options: the shared budget of large answers (the Agent transport takes from it too). */
export interface LimitsPluginOptions {
  budget: ByteBudget;
}

type HookDone = (err?: Error) => void;

/** Seconds a shed request is told to wait. */
const SHED_RETRY_AFTER_SECONDS = 2;

function isPublic(request: FastifyRequest): boolean {
  return request.routeOptions.config.public === true;
}

/** The first hook of every request: 503 while the process is saturated (public routes pass). */
async function registerShedding(app: FastifyInstance): Promise<void> {
  const s = app.config.shedding;
  if (s.maxEventLoopDelayMs === 0 && s.maxHeapUsedBytes === 0 && s.maxRssBytes === 0) return;
  await app.register(underPressure, {
    maxEventLoopDelay: s.maxEventLoopDelayMs,
    maxHeapUsedBytes: s.maxHeapUsedBytes,
    maxRssBytes: s.maxRssBytes,
    pressureHandler: (request: FastifyRequest, _reply: FastifyReply, type: string, value?: number) => {
      if (isPublic(request)) return undefined;
      // under-pressure reads a sample interval that recorded no event-loop delay at all as
      // Infinity: that happens after the loop was blocked across a whole interval (a replica's
      // start), when its sample timer runs before the delay monitor's. No sample is no reading;
      // a loop that stays saturated shows a finite delay in the next interval and is shed then.
      // (It shed every call for up to a second after each start: gateway integration, CI.)
      if (type === 'eventLoopDelay' && !Number.isFinite(value)) return undefined;
      app.metrics.shed.inc({ reason: type });
      const detail = `the gateway is saturated (${type}${value === undefined ? '' : ` ${Math.round(value)}`}); retry shortly`;
      return Promise.reject(
        new ProblemError('overloaded', detail, { retryAfterSeconds: SHED_RETRY_AFTER_SECONDS }),
      );
    },
  });
}

/** Length of the rate limit's fixed window. */
const RATE_WINDOW_MS = 1000;

/**
 * A fixed one-second window of requests per key. Hand-written rather than @fastify/rate-limit:
 * that plugin's in-memory store hands every caller the same mutable counter across an await, so
 * requests arriving in one tick all read the final count (4 concurrent calls with a limit of 3
 * were all refused), and its async hook adds promise hops to every call.
 */
class RateWindows {
  private readonly windows = new Map<string, { start: number; count: number }>();

  constructor(private readonly max: number) {}

  /** Counts a request; the seconds to wait when it is over the limit, else 0. */
  take(keyId: string, now: number): number {
    let w = this.windows.get(keyId);
    if (!w || now - w.start >= RATE_WINDOW_MS) {
      w = { start: now, count: 0 };
      this.windows.set(keyId, w);
    }
    if (++w.count <= this.max) return 0;
    return Math.max(1, Math.ceil((w.start + RATE_WINDOW_MS - now) / 1000));
  }
}

/** Requests in flight per key: counted from authentication until the response is closed. */
class InFlight {
  private readonly counts = new Map<string, number>();

  constructor(private readonly max: number) {}

  /** Counts a request in, unless the key is at its limit (then the count in flight). */
  enter(keyId: string): number | undefined {
    const n = this.counts.get(keyId) ?? 0;
    if (n >= this.max) return n;
    this.counts.set(keyId, n + 1);
    return undefined;
  }

  leave(keyId: string): void {
    const n = (this.counts.get(keyId) ?? 1) - 1;
    if (n > 0) this.counts.set(keyId, n);
    else this.counts.delete(keyId);
  }
}

/**
 * Per-key rate and concurrency, checked right after authentication and before the body is read.
 * One callback hook (not async): it runs on every request.
 */
function registerKeyLimits(app: FastifyInstance): void {
  const { maxRequestsPerSecond: rate, maxConcurrentRequests: concurrency } = app.config.tenants;
  if (rate === 0 && concurrency === 0) return;
  const windows = rate > 0 ? new RateWindows(rate) : undefined;
  const inFlight = concurrency > 0 ? new InFlight(concurrency) : undefined;
  app.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, hookDone: HookDone) => {
    if (isPublic(request)) return hookDone();
    const keyId = request.principal.keyId;
    const wait = windows?.take(keyId, Date.now()) ?? 0;
    if (wait > 0) {
      app.metrics.limited.inc({ limit: 'rate' });
      const detail = `API key ${keyId} sent more than ${rate} requests in a second`;
      return hookDone(new ProblemError('rate-limited', detail, { retryAfterSeconds: wait }));
    }
    if (!inFlight) return hookDone();
    const busy = inFlight.enter(keyId);
    if (busy !== undefined) {
      app.metrics.limited.inc({ limit: 'concurrency' });
      const detail = `API key ${keyId} has ${busy} requests in flight; the limit is ${concurrency}`;
      return hookDone(new ProblemError('concurrency-limited', detail, { retryAfterSeconds: 1 }));
    }
    // 'close' comes once, after the response was written or the client left.
    reply.raw.once('close', () => inFlight.leave(keyId));
    hookDone();
  });
}

/**
 * The memory one response holds from the shared budget: what its agent answer took while it was
 * read (ANSWER_MEMORY_FACTOR per byte: the raw body, its parsed strings, the serialized response)
 * and, for other large payloads, their size. All of it is given back once the response is closed
 * (written, dropped by the write timeout, or the client left).
 */
export class ResponseHold implements AnswerHold {
  private taken = 0;

  constructor(
    private readonly res: ServerResponse,
    private readonly budget: ByteBudget,
  ) {}

  tryTake(bytes: number): boolean {
    if (!this.budget.tryTake(bytes)) return false;
    if (this.taken === 0) this.res.once('close', () => this.budget.give(this.taken));
    this.taken += bytes;
    return true;
  }

  /** Makes sure at least `bytes` are held (a payload about to be written); false when they cannot be. */
  cover(bytes: number): boolean {
    return bytes <= this.taken || this.tryTake(bytes - this.taken);
  }
}

const holds = new WeakMap<ServerResponse, ResponseHold>();

/** The hold of a response (made on first use). */
export function responseHold(res: ServerResponse, budget: ByteBudget): ResponseHold {
  let hold = holds.get(res);
  if (!hold) {
    hold = new ResponseHold(res, budget);
    holds.set(res, hold);
  }
  return hold;
}

/**
 * Before a large buffered payload is written: it must be covered by the response's hold (true),
 * and a client that does not read it for `writeTimeoutMs` (no byte drained) is disconnected.
 * False when the budget cannot cover it. Streams are not passed here: they wait with backpressure.
 */
export function holdResponse(
  res: ServerResponse,
  bytes: number,
  budget: ByteBudget,
  writeTimeoutMs: number,
): boolean {
  if (bytes < UNCOUNTED_BYTES) return true;
  if (!responseHold(res, budget).cover(bytes)) return false;
  res.setTimeout(writeTimeoutMs, () => res.destroy());
  return true;
}

function registerResponseHold(app: FastifyInstance, budget: ByteBudget): void {
  const { writeTimeoutMs } = app.config.server;
  // A callback hook (not async): it runs on every response; small payloads cost a type check.
  app.addHook(
    'onSend',
    (
      request: FastifyRequest,
      reply: FastifyReply,
      payload: unknown,
      hookDone: (err: Error | null, payload?: unknown) => void,
    ) => {
      const bytes =
        typeof payload === 'string' ? payload.length : Buffer.isBuffer(payload) ? payload.length : 0;
      if (holdResponse(reply.raw, bytes, budget, writeTimeoutMs)) return hookDone(null, payload);
      request.log.warn(
        { bytes, inUse: budget.inUse },
        'answer dropped: the buffered answer budget is used up',
      );
      app.metrics.shed.inc({ reason: 'answerBudget' });
      hookDone(
        new ProblemError('overloaded', 'the gateway holds too many large answers right now', {
          retryAfterSeconds: 1,
        }),
      );
    },
  );
}

/** Load shedding: registered before authentication, so a saturated replica sheds cheaply. */
export const sheddingPlugin = fp(async (app: FastifyInstance) => registerShedding(app), {
  name: 'shedding',
  fastify: '5.x',
  dependencies: ['errors', 'services', 'metrics'],
});

/** Per-key limits and the hold of large responses: registered after authentication. */
export default fp<LimitsPluginOptions>(
  (app: FastifyInstance, opts: LimitsPluginOptions, done: (err?: Error) => void) => {
    app.decorate('answerBudget', opts.budget);
    app.decorate('cpuMeters', new CpuMeters(app.config.tenants.answerCpuMsPerSecond));
    registerKeyLimits(app);
    registerResponseHold(app, opts.budget);
    done();
  },
  { name: 'limits', fastify: '5.x', dependencies: ['errors', 'services', 'metrics', 'auth'] },
);
