/**
 * The trace context of a request, as the route handlers pass it down (CallOptions.trace): the
 * context @fastify/otel made for the request, with its span, which the tracing plugin's onRequest
 * hook puts on `request.traceContext` (request-lifetime.ts). Undefined when tracing is off (nothing
 * sets it) and for the routes it does not trace. No OpenTelemetry module is loaded here: with
 * tracing off this is one property read.
 */
import type { FastifyRequest } from 'fastify';

import type { TraceContext } from './tracing-config.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Tracing on: the request's trace context (tracing/request-lifetime.ts); absent otherwise. */
    traceContext?: TraceContext;
  }
}

/** `{ trace }` of the request when it has one, else nothing: spread into an options object. */
export function traceOption(request: FastifyRequest): { trace?: TraceContext } {
  const trace = request.traceContext;
  return trace ? { trace } : {};
}
