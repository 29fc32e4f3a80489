/**
 * Trace ids in the agent's log lines: the lines written for a request that carried a sampled W3C
 * `traceparent` (from the gateway) carry `trace_id` and `span_id`, the field names of the
 * gateway's own lines (api-gateway/src/logger.ts), so one search finds a request's lines on both
 * sides. The agent has no span of its own (the gateway records it, docs/adr/0019): `span_id` is the
 * traceparent's parent id, the gateway's span of the call to this agent, whose child is the
 * agent's span. Only ids: never the command, its output or a header's other content.
 */
import type { IncomingMessage } from 'node:http';

import { withFields, type Logger } from '../log.js';
import { parseTraceparent } from './command-timing.js';

/** `trace_id` and `span_id` of a request with a valid, sampled traceparent; undefined otherwise. */
export function traceLogFields(req: IncomingMessage): { trace_id: string; span_id: string } | undefined {
  const tp = parseTraceparent(req.headers.traceparent);
  return tp?.sampled ? { trace_id: tp.traceId, span_id: tp.parentId } : undefined;
}

/** The request's logger: `logger` itself unless the request is traced (no cost untraced). */
export function requestLogger(logger: Logger, req: IncomingMessage): Logger {
  const fields = traceLogFields(req);
  return fields ? withFields(logger, fields) : logger;
}
