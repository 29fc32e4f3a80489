/**
 * Request spans that end with the response, however it ends. @fastify/otel ends a request's span
 * in its last onSend hook (when the answer is handed to fastify, before a streamed body is
 * written) or in onResponse (when the response finished). A hijacked reply (the port proxy) or a
 * WebSocket upgrade (the terminal, port WebSockets) has no onSend, and a client that goes away
 * mid-body never lets the response finish: those spans never ended, so they were never exported
 * and stayed in memory. Here:
 * - a streamed answer (exec stream, process output follow) keeps its span open until the body was
 *   written, so the span covers the stream;
 * - when the connection closes first, the span ends then, failed, with a `client.disconnected`
 *   event (or, when the streamed body itself failed and the gateway cut the connection, failed
 *   with that error and no such event); an upgraded connection (a WebSocket) ends its span when it closes, with a
 *   `websocket.closed` event (a closed terminal is no error; the gateway cannot tell here who
 *   closed it).
 */
import type { Readable } from 'node:stream';

import { SpanStatusCode, TraceFlags, type Span } from '@opentelemetry/api';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

import './request-trace.js'; // request.traceContext
import { fail } from './span-status.js';

/** Event of a span whose client went away before its answer was complete. */
export const EVENT_CLIENT_GONE = 'client.disconnected';
/** Event of a WebSocket request span, when the connection closed. */
export const EVENT_WEBSOCKET_CLOSED = 'websocket.closed';

/** One request's span and, once deferred, @fastify/otel's end of it. */
interface Lifetime {
  readonly span: Span;
  end?: () => void;
  /** The streamed body failed (the gateway cut the connection): not the client's doing. */
  bodyError?: Error;
}

const lifetimes = new WeakMap<FastifyRequest, Lifetime>();

/**
 * The hooks; registered right after @fastify/otel's plugin (tracing.ts), so its span exists. The
 * onRequest hook also hands the request's trace context to the routes (`request.traceContext`,
 * request-trace.ts), and gives a sampled request a logger whose lines carry its trace_id and
 * span_id (a child of fastify's request logger, made once per traced request).
 */
export const requestLifetime = fp(
  (app: FastifyInstance, _opts: unknown, done: (err?: Error) => void) => {
    app.decorateRequest('traceContext', undefined);
    app.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, hookDone: () => void) => {
      const { span, context } = request.opentelemetry();
      if (context) request.traceContext = context;
      if (span?.isRecording()) {
        const { traceId, spanId, traceFlags } = span.spanContext();
        if (traceFlags & TraceFlags.SAMPLED) {
          // reply.log is its own reference to the same logger: both, so every line of the request has them.
          request.log = reply.log = request.log.child({ trace_id: traceId, span_id: spanId });
        }
        const lifetime: Lifetime = { span };
        lifetimes.set(request, lifetime);
        const settle = (): void => settleSpan(lifetime, request, reply);
        // Both: 'close' alone may come long after 'finish' on a kept-alive connection.
        reply.raw.once('finish', settle);
        reply.raw.once('close', settle);
      }
      hookDone();
    });
    // Before @fastify/otel's own onSend (a route-level hook, run after the app's).
    app.addHook(
      'onSend',
      (
        request: FastifyRequest,
        _reply: FastifyReply,
        payload: unknown,
        hookDone: (err: null, p: unknown) => void,
      ) => {
        const lifetime = lifetimes.get(request);
        if (lifetime && isStream(payload) && lifetime.span.isRecording()) {
          deferEnd(lifetime);
          payload.once('error', (err: Error) => (lifetime.bodyError ??= err));
        }
        hookDone(null, payload);
      },
    );
    done();
  },
  { name: 'tracing-request-lifetime', fastify: '5.x' },
);

/** Holds @fastify/otel's end of the span until the response is done (settleSpan). */
function deferEnd(lifetime: Lifetime): void {
  const { span } = lifetime;
  const end = span.end.bind(span);
  lifetime.end = () => end();
  span.end = (): void => undefined;
}

/**
 * The response finished or its connection closed. Finished: a held-back span ends now (one that was
 * not held back is @fastify/otel's to end, in its onResponse hook, with the status code). Closed
 * first: the span ends now, marked.
 */
function settleSpan(lifetime: Lifetime, request: FastifyRequest, reply: FastifyReply): void {
  const { span } = lifetime;
  if (!span.isRecording()) return; // ended already
  if (reply.raw.writableFinished) {
    lifetime.end?.();
    return;
  }
  if (lifetime.bodyError) {
    fail(span, lifetime.bodyError);
  } else if (request.raw.headers.upgrade !== undefined && reply.sent) {
    span.addEvent(EVENT_WEBSOCKET_CLOSED);
  } else {
    span.addEvent(EVENT_CLIENT_GONE);
    span.setStatus({
      code: SpanStatusCode.ERROR,
      message: 'the client went away before the response was complete',
    });
  }
  if (lifetime.end) lifetime.end();
  else span.end();
}

function isStream(payload: unknown): payload is Readable {
  return typeof payload === 'object' && payload !== null && typeof (payload as Readable).pipe === 'function';
}
