/**
 * winston behind the logger interface fastify accepts as `loggerInstance` (pino's call shapes:
 * `log.info(msg)`, `log.info(obj, msg)`, `log.child(bindings)`). Lines have the platform's one
 * shape (@sandbox-platform/api formatLogLine: `time`, `level`, `msg`, `service:
 * sandbox-api-gateway`, `trace_id`/`span_id` of a traced request, then key/values such as
 * session, namespace, reason, reqId); never secrets: request headers are not logged.
 */
import { formatLogLine, logMessageText } from '@sandbox-platform/api';
import type { FastifyBaseLogger } from 'fastify';
import winston from 'winston';
import TransportStream from 'winston-transport';

type Level = 'error' | 'warn' | 'info' | 'debug';

/** How long a debug or info line may wait in the batch before it is written. */
export const LOG_BATCH_MS = 100;
/** A batch this large is written at once. */
const LOG_BATCH_BYTES = 64 * 1024;

/** What the batching transport writes to (process.stdout, or a test's or benchmark's sink). */
export interface LineSink {
  write(chunk: string): unknown;
}

/**
 * A winston transport that writes its lines in batches: debug and info lines are collected for
 * up to LOG_BATCH_MS (or LOG_BATCH_BYTES) and written with one write; a warn or error line writes
 * the batch and itself at once. Why: stdout is a pipe to the container runtime, and a write per
 * line wakes the runtime's reader on every exec; on the deployment's 2 cores that cost the gateway
 * about 0.1 ms per exec at p50 (docs/adr/0008-gateway-log-writes-in-batches.md). The lines and their order
 * are unchanged; `flush()` writes what is pending (server.ts calls it on exit).
 */
export class BatchedLineTransport extends TransportStream {
  private lines: string[] = [];
  private bytes = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly sink: LineSink) {
    super();
  }

  override log(info: winston.Logform.TransformableInfo, next: () => void): void {
    const line = `${info[Symbol.for('message')] as string}\n`;
    this.lines.push(line);
    this.bytes += line.length;
    if (info.level === 'error' || info.level === 'warn' || this.bytes >= LOG_BATCH_BYTES) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), LOG_BATCH_MS).unref();
    next();
  }

  /** Writes the pending lines now. */
  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.lines.length === 0) return;
    const text = this.lines.length === 1 ? this.lines[0]! : this.lines.join('');
    this.lines = [];
    this.bytes = 0;
    this.sink.write(text);
  }

  override close(): void {
    this.flush();
  }
}

/**
 * Creates the process logger: JSON lines on stdout, written in batches (BatchedLineTransport); on
 * `sink` instead when given (the benchmark writes them to a pipe read by another process, as the
 * container runtime reads stdout, so their cost is measured).
 */
export function createWinston(level: Level, sink: LineSink = process.stdout): winston.Logger {
  return winston.createLogger({
    level,
    format: winston.format.combine(winston.format.errors({ stack: true }), winston.format(oneLine)()),
    transports: [new BatchedLineTransport(sink)],
  });
}

/** winston's key of the formatted line (triple-beam's MESSAGE), what its transports write. */
const MESSAGE = Symbol.for('message');

/** Formats a winston entry as the platform's log line. */
function oneLine(info: winston.Logform.TransformableInfo): winston.Logform.TransformableInfo {
  const { level, message, ...fields } = info;
  info[MESSAGE] = formatLogLine(
    { service: 'sandbox-api-gateway', level, msg: logMessageText(message) },
    fields,
  );
  return info;
}

/** Writes the pending lines of a logger's batching transports (at exit). */
export function flushLogs(logger: winston.Logger): void {
  for (const t of logger.transports) if (t instanceof BatchedLineTransport) t.flush();
}

/** A logger that discards everything (tests). */
export function silentWinston(): winston.Logger {
  return winston.createLogger({
    silent: true,
    transports: [new winston.transports.Console({ silent: true })],
  });
}

/** Splits pino-style arguments into a message and structured metadata. */
function toEntry(args: unknown[]): { message: string; meta: Record<string, unknown> } {
  const [first, second] = args;
  if (typeof first === 'string') return { message: first, meta: {} };
  if (first instanceof Error) {
    return {
      message: typeof second === 'string' ? second : first.message,
      meta: { err: serializeError(first) },
    };
  }
  const meta = isRecord(first) ? normalize(first) : {};
  return { message: typeof second === 'string' ? second : '', meta };
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null;
}

/** fastify logs `{ req }`, `{ res }` and `{ err }` objects: keep the useful, non-secret parts. */
function normalize(obj: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj)) {
    if (v instanceof Error) out[k] = serializeError(v);
    else if (k === 'req' && isRecord(v)) out[k] = { method: v.method, url: v.url, remoteAddress: v.ip };
    else if (k === 'res' && isRecord(v)) out[k] = { statusCode: v.statusCode };
    else out[k] = v;
  }
  return out;
}

/** The parts of an error worth logging (message, code, stack, and its cause chain). */
export function serializeError(err: Error): Record<string, unknown> {
  const out: Record<string, unknown> = { message: err.message, name: err.name, stack: err.stack };
  const code = (err as { code?: unknown }).code;
  if (code !== undefined) out.code = code;
  if (err.cause instanceof Error) out.cause = serializeError(err.cause);
  return out;
}

/** Adapts a winston logger to fastify's logger interface. */
export class WinstonFastifyLogger implements FastifyBaseLogger {
  private bound: winston.Logger | undefined;

  /**
   * `root` writes the lines; `bindings` (a child's fields, e.g. fastify's reqId) are added to each
   * of them, put before the line's own fields as a winston child puts them: fastify makes a child
   * per request, and an exec writes its audit line through it, so no winston child is made per
   * request (one is made only when a level is set on this adapter, or for bindings that winston's
   * log() would read as the line's message, stack or cause).
   */
  constructor(
    private readonly root: winston.Logger,
    private readonly bindings?: Record<string, unknown>,
  ) {
    if (bindings && ('message' in bindings || 'stack' in bindings || 'cause' in bindings)) {
      this.bound = root.child(bindings);
    }
  }

  /** The winston logger of this adapter (the child, made now if it was not yet). */
  private get w(): winston.Logger {
    return (this.bound ??= this.bindings ? this.root.child(this.bindings) : this.root);
  }

  get level(): string {
    return (this.bound ?? this.root).level;
  }

  set level(value: string) {
    this.w.level = value;
  }

  private write(level: Level, args: unknown[]): void {
    const w = this.bound ?? this.root;
    if (!w.isLevelEnabled(level)) return;
    const { message, meta } = toEntry(args);
    if (this.bound || !this.bindings) w.log(level, message, meta);
    // winston's log() reads `%` in a message as a format token (and then drops the metadata): such
    // lines go through the winston child, as they always did.
    else if (message.includes('%')) this.w.log(level, message, meta);
    // The same fields in the same order as a winston child's Object.assign({}, bindings, info).
    else w.log(level, message, { ...this.bindings, ...meta });
  }

  fatal = (...args: unknown[]): void => this.write('error', args);
  error = (...args: unknown[]): void => this.write('error', args);
  warn = (...args: unknown[]): void => this.write('warn', args);
  info = (...args: unknown[]): void => this.write('info', args);
  debug = (...args: unknown[]): void => this.write('debug', args);
  trace = (...args: unknown[]): void => this.write('debug', args);
  silent = (): void => undefined;

  child(bindings: Record<string, unknown>): FastifyBaseLogger {
    // Nested winston children add their fields innermost first, so merging (the child's win) is
    // the same; a child made already (it may have its own level) is the parent as it is.
    if (this.bound) return new WinstonFastifyLogger(this.bound, bindings);
    return new WinstonFastifyLogger(this.root, this.bindings ? { ...this.bindings, ...bindings } : bindings);
  }
}
