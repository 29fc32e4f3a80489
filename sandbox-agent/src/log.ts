/**
 * Structured logs: one JSON object per line on stdout, for the node's log collector, in the
 * platform's one shape (@sandbox-platform/api formatLogLine: `time`, `level`, `msg`, `service:
 * sandbox-agent`, `trace_id`/`span_id` of a traced call, then the fields). Callers pass only
 * metadata (ids, sizes, durations, status codes): never the token, command text or output.
 */
import { formatLogLine } from '@sandbox-platform/api';

/** Log levels, most verbose first; `silent` turns logging off (tests). */
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const;

/** One of {@link LOG_LEVELS}. */
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Key/value context attached to a log line. */
export type LogFields = Record<string, string | number | boolean | undefined>;

/** The narrow logger every module receives; only the composition root builds one. */
export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
}

/** Where log lines go; stdout in production, a buffer in tests. */
export type LogSink = (line: string) => void;

const writeStdout: LogSink = (line) => {
  process.stdout.write(line);
};

/** Builds a JSON-lines logger that drops lines below `level`. */
export function createLogger(level: LogLevel, sink: LogSink = writeStdout): Logger {
  const threshold = LOG_LEVELS.indexOf(level);
  const emit = (at: LogLevel, msg: string, fields?: LogFields): void => {
    if (LOG_LEVELS.indexOf(at) < threshold) return;
    sink(`${formatLogLine({ service: 'sandbox-agent', level: at, msg }, fields)}\n`);
  };
  return {
    debug: (msg, fields) => emit('debug', msg, fields),
    info: (msg, fields) => emit('info', msg, fields),
    warn: (msg, fields) => emit('warn', msg, fields),
    error: (msg, fields) => emit('error', msg, fields),
  };
}

/** A logger that adds `fields` to every line (a request's trace ids, say); the line's own win. */
export function withFields(logger: Logger, fields: LogFields): Logger {
  return {
    debug: (msg, own) => logger.debug(msg, { ...fields, ...own }),
    info: (msg, own) => logger.info(msg, { ...fields, ...own }),
    warn: (msg, own) => logger.warn(msg, { ...fields, ...own }),
    error: (msg, own) => logger.error(msg, { ...fields, ...own }),
  };
}

/** The message of an unknown thrown value, for log fields. */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
