/**
 * The guard of a code run's event stream (`POST /v1/code`, ADR 0033): the agent's NDJSON passes
 * line by line, each line bounded (CODE_LINE_MAX_BYTES), shape-scanned, parsed, validated against
 * the wire contract (stdout/stderr, result/display, error, then exactly one end line) and
 * re-serialized; the whole stream is bounded by CODE_RUN_MAX_BYTES. What reaches the caller is
 * only lines of the contract, and the gateway holds at most one partial line per run. A violation
 * destroys the stream with 502 `agent-protocol-error`.
 */
import { Transform, type TransformCallback } from 'node:stream';

import {
  CODE_LINE_MAX_BYTES,
  CODE_RUN_MAX_BYTES,
  codeDataEventSchema,
  codeEndEventSchema,
  codeErrorEventSchema,
  codeStreamEventSchema,
  type CodeEvent,
} from '@sandbox-platform/api';
import { Ajv, type ValidateFunction } from 'ajv';

import { ProblemError } from '../../errors.js';
import type { CpuMeter } from '../../limits/cpu-meter.js';
import { checkJsonShape, checkSchema, MAX_JSON_DEPTH, SCAN_THRESHOLD_BYTES } from '../agent/agent-json.js';
import { AgentProtocolError } from '../agent/agent-wire.js';

/** Most structural tokens of one line: 64 MIME items, 64 omitted entries, 256 traceback lines. */
const MAX_LINE_TOKENS = 2048;
const NEWLINE = 0x0a;

const ajv = new Ajv({ allErrors: false, strict: true });
const VALIDATE: Record<string, ValidateFunction<CodeEvent>> = {
  stream: ajv.compile<CodeEvent>(codeStreamEventSchema),
  data: ajv.compile<CodeEvent>(codeDataEventSchema),
  error: ajv.compile<CodeEvent>(codeErrorEventSchema),
  end: ajv.compile<CodeEvent>(codeEndEventSchema),
};
const KIND: Record<string, string> = {
  stdout: 'stream',
  stderr: 'stream',
  result: 'data',
  display: 'data',
  error: 'error',
  end: 'end',
};

/** Called with each line's size before it is passed on; false refuses it (the budget is used up). */
export type LineHold = (bytes: number) => boolean;

/** Agent NDJSON -> validated NDJSON (object mode off: lines of text). */
export class CodeStreamGuard extends Transform {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private total = 0;
  private ended = false;

  constructor(
    private readonly meter?: CpuMeter,
    private readonly hold?: LineHold,
  ) {
    super();
  }

  /** True once the end line passed. */
  get complete(): boolean {
    return this.ended;
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    const started = this.meter ? performance.now() : 0;
    try {
      this.total += chunk.length;
      if (this.total > CODE_RUN_MAX_BYTES) {
        throw new AgentProtocolError(`run stream longer than ${CODE_RUN_MAX_BYTES} bytes`);
      }
      this.lines(chunk);
    } catch (err) {
      return cb(toProblem(err));
    }
    const wait = this.meter ? this.meter.charge(performance.now() - started) : 0;
    if (wait > 0) setTimeout(() => cb(), wait);
    else cb();
  }

  override _flush(cb: TransformCallback): void {
    try {
      if (this.pendingBytes > 0) this.line(this.takeLine(Buffer.alloc(0)));
      if (!this.ended) throw new AgentProtocolError('run stream ended without an end line');
      cb();
    } catch (err) {
      cb(toProblem(err));
    }
  }

  private lines(chunk: Buffer): void {
    let start = 0;
    for (let nl = chunk.indexOf(NEWLINE); nl >= 0; nl = chunk.indexOf(NEWLINE, start)) {
      const piece = chunk.subarray(start, nl);
      this.line(this.pendingBytes > 0 ? this.takeLine(piece) : piece);
      start = nl + 1;
    }
    if (start < chunk.length) {
      this.pendingBytes += chunk.length - start;
      if (this.pendingBytes > CODE_LINE_MAX_BYTES) {
        throw new AgentProtocolError(`run stream line longer than ${CODE_LINE_MAX_BYTES} bytes`);
      }
      this.pending.push(Buffer.from(chunk.subarray(start)));
    }
  }

  private takeLine(tail: Buffer): Buffer {
    const line = Buffer.concat([...this.pending, tail], this.pendingBytes + tail.length);
    this.pending = [];
    this.pendingBytes = 0;
    if (line.length > CODE_LINE_MAX_BYTES) {
      throw new AgentProtocolError(`run stream line longer than ${CODE_LINE_MAX_BYTES} bytes`);
    }
    return line;
  }

  private line(bytes: Buffer): void {
    if (bytes.length === 0) return;
    if (this.ended) throw new AgentProtocolError('run stream continues after the end line');
    if (bytes.length > SCAN_THRESHOLD_BYTES) checkJsonShape(bytes, MAX_JSON_DEPTH, MAX_LINE_TOKENS);
    const ev = parseEvent(bytes);
    if (ev.type === 'end') this.ended = true;
    const out = JSON.stringify(ev) + '\n';
    if (this.hold && !this.hold(out.length)) {
      throw new ProblemError('overloaded', 'the gateway holds too many large answers right now', {
        retryAfterSeconds: 1,
      });
    }
    this.push(out);
  }
}

/** Parses one line and validates it against the schema of its type. */
function parseEvent(bytes: Buffer): CodeEvent {
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw new AgentProtocolError('run stream line is not valid JSON');
  }
  const type = (value as { type?: unknown } | null)?.type;
  const kind = typeof type === 'string' && Object.hasOwn(KIND, type) ? KIND[type] : undefined;
  const validate = kind === undefined ? undefined : VALIDATE[kind];
  if (!validate) throw new AgentProtocolError('run stream line has an unknown type');
  return checkSchema(value, validate);
}

function toProblem(err: unknown): Error {
  if (err instanceof AgentProtocolError) {
    return new ProblemError(
      'agent-protocol-error',
      `the sandbox agent's run stream is malformed: ${err.message}`,
    );
  }
  return err as Error;
}
