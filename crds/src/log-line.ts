/**
 * The one log line shape of the operator, the gateway and the agent (docs/observability.md,
 * "Logs"): one JSON object per line, starting with `time` (ISO 8601, UTC), `level` (error, warn,
 * info, debug), `msg` and `service` (sandbox-operator, sandbox-api-gateway, sandbox-agent: the
 * services' default OpenTelemetry service.name, so logs and traces name them alike), then
 * `trace_id` and `span_id` when the line belongs to a sampled trace, then the line's own fields
 * (`session`, `namespace`, `reason`, `error`, ...). A field with one of the leading names is dropped: the
 * leading fields always mean the same thing.
 */

/** The services that write log lines. */
export type LogService =
  'sandbox-operator' | 'sandbox-api-gateway' | 'sandbox-agent' | 'sandbox-egress-proxy';

/** The fields every line starts with, in this order. */
export const LOG_LINE_LEADING_FIELDS = ['time', 'level', 'msg', 'service'] as const;

/** The leading part of a line: who wrote it, how severe, what happened, when (default: now). */
export interface LogLineHead {
  service: LogService;
  level: string;
  msg: string;
  time?: Date;
}

/** Formats one log line (without the newline). */
export function formatLogLine(head: LogLineHead, fields: Readonly<Record<string, unknown>> = {}): string {
  const line: Record<string, unknown> = {
    time: (head.time ?? new Date()).toISOString(),
    level: head.level,
    msg: head.msg,
    service: head.service,
  };
  if (fields.trace_id !== undefined) line.trace_id = fields.trace_id;
  if (fields.span_id !== undefined) line.span_id = fields.span_id;
  for (const [k, v] of Object.entries(fields)) {
    if (!(k in line)) line[k] = v;
  }
  return JSON.stringify(line);
}

/** A winston entry's message as text (winston allows any value there). */
export function logMessageText(message: unknown): string {
  return typeof message === 'string' ? message : (JSON.stringify(message) ?? '');
}
