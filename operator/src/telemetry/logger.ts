/**
 * winston JSON logger: one JSON object per line on stdout in the platform's one line shape
 * (@sandbox-platform/api formatLogLine: `time`, `level`, `msg`, `service: sandbox-operator`, `trace_id`/
 * `span_id` while tracing, then the structured fields `namespace`, `session`, `reason`, ...).
 * Secret values are never passed in; as a second line of defence, fields whose name suggests a
 * secret are replaced by "[redacted]".
 */
import { formatLogLine, logMessageText } from '@sandbox-platform/api';
import winston from 'winston';

import { apiErrorInfo } from '../kube/errors.js';
import type { LogFields, Logger } from './log-port.js';

/** Log levels, most severe first. */
export const LOG_LEVELS = ['error', 'warn', 'info', 'debug'] as const;
/** One of LOG_LEVELS. */
export type LogLevel = (typeof LOG_LEVELS)[number];

const SECRET_FIELD = /token|secret.?data|master.?key|password|authorization/i;
/** winston's key of the formatted line (triple-beam's MESSAGE), what its transports write. */
const MESSAGE = Symbol.for('message');

/** Options of {@link createLogger}. */
export interface LoggerOptions {
  /**
   * Fields of the moment a line is written: the trace and span ids while tracing is on
   * (telemetry/tracing.ts). Undefined: nothing is called per line.
   */
  readonly context?: () => LogFields | undefined;
  /** Where the lines go instead of stdout (tests). */
  readonly stream?: NodeJS.WritableStream;
}

/** Creates the process logger writing JSON lines to stdout. */
export function createLogger(level: LogLevel, base: LogFields = {}, opts: LoggerOptions = {}): Logger {
  const { context } = opts;
  const line = (info: winston.Logform.TransformableInfo): winston.Logform.TransformableInfo => {
    const { level: at, message, ...fields } = redact(info);
    const all = context ? { ...fields, ...context() } : fields;
    info[MESSAGE] = formatLogLine(
      { service: 'sandbox-operator', level: at, msg: logMessageText(message) },
      all,
    );
    return info;
  };
  const logger = winston.createLogger({
    level,
    levels: { error: 0, warn: 1, info: 2, debug: 3 },
    defaultMeta: base,
    format: winston.format(line)(),
    transports: [
      opts.stream ? new winston.transports.Stream({ stream: opts.stream }) : new winston.transports.Console(),
    ],
  });
  // winston formats every call and filters by level only in the transport, so a disabled level
  // is skipped here (debug lines are frequent: per reconcile, per watch event).
  const enabled = (l: LogLevel): boolean => logger.isLevelEnabled(l);
  const skip = (): void => undefined;
  return {
    error: (message, fields) => logger.error(message, fields),
    warn: enabled('warn') ? (message, fields) => logger.warn(message, fields) : skip,
    info: enabled('info') ? (message, fields) => logger.info(message, fields) : skip,
    debug: enabled('debug') ? (message, fields) => logger.debug(message, fields) : skip,
  };
}

function redact<T extends Record<string, unknown>>(info: T): T {
  for (const key of Object.keys(info)) {
    if (SECRET_FIELD.test(key)) (info as Record<string, unknown>)[key] = '[redacted]';
  }
  return info;
}

/**
 * Log fields describing an error: its message and the chain of causes, with the API status code
 * and reason where there is one. Response bodies are not logged (a Status message can quote
 * request fields); only the Status reason and message are.
 */
export function errorFields(err: unknown): LogFields {
  const chain: string[] = [];
  let api: { code?: number; reason?: string } = {};
  let current: unknown = err;
  for (let depth = 0; current !== undefined && current !== null && depth < 8; depth++) {
    const info = apiErrorInfo(current);
    if (info.code !== undefined && api.code === undefined) api = { code: info.code, reason: info.reason };
    chain.push(describe(current, info.message));
    current = current instanceof Error ? current.cause : undefined;
  }
  return {
    error: chain.join(': '),
    ...(api.code !== undefined ? { apiCode: api.code, apiReason: api.reason } : {}),
  };
}

function describe(err: unknown, statusMessage: string | undefined): string {
  if (statusMessage) return statusMessage;
  if (err instanceof Error) return err.message.split('\n')[0] ?? err.name;
  return String(err);
}
