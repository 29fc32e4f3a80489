/** The logging interface the rest of the operator depends on (winston behind it, a fake in tests). */

/** Structured fields of a log line: session, namespace, reason, ... Never secret values. */
export type LogFields = Record<string, unknown>;

/** A structured logger. */
export interface Logger {
  error(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  debug(message: string, fields?: LogFields): void;
}
