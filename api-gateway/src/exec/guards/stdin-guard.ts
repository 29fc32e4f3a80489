/**
 * The guard of streamed stdin (an NDJSON `POST /v1/sessions/{name}/exec/stream` request after its
 * first line): the caller's lines pass through it to the agent as they arrive, each checked first
 * against the wire contract (`ExecStdinChunk` or `ExecStdinClose`, crds/src/wire, ADR 0018). It
 * bounds one line (STDIN_LINE_MAX_BYTES, the agent's own bound) and the decoded stdin bytes of the
 * whole call, and refuses anything after the close line. A violation destroys the stream with a
 * ProblemError (`invalid-request` or `payload-too-large`): the agent call fails with it, which
 * closes the agent connection, so the agent stops the command. Memory held is one partial line at
 * most; backpressure passes through (a Transform), and the CPU spent checking lines is charged to
 * the caller's key like the answers are (reading pauses while the key is in debt).
 */
import { Transform, type TransformCallback } from 'node:stream';

import { STDIN_LINE_MAX_BYTES, execStdinChunkSchema, execStdinCloseSchema } from '@sandbox-platform/api';
import { Ajv } from 'ajv';

import { ProblemError } from '../../errors.js';
import { UNMETERED, type CpuMeter } from '../../limits/cpu-meter.js';

const NEWLINE = 0x0a;
/** Canonical base64, as the agent accepts it (sandbox-agent/src/exec/encoding.ts). */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

const ajv = new Ajv({ allErrors: false, strict: false });
const validChunk = ajv.compile<{ type: 'stdin'; data: string; encoding?: 'utf-8' | 'base64' }>(
  execStdinChunkSchema,
);
const validClose = ajv.compile<{ type: 'close' }>(execStdinCloseSchema);

/** Limits of one call's stdin. */
export interface StdinLimits {
  /** Decoded stdin bytes accepted in all (GATEWAY_MAX_EXEC_STDIN_STREAM_BYTES). */
  maxBytes: number;
  /** Longest line in bytes (default STDIN_LINE_MAX_BYTES: longer lines the agent refuses anyway). */
  maxLineBytes?: number;
}

/** Caller's stdin lines -> the same lines, checked, to the agent. */
export class StdinGuard extends Transform {
  private partial: Buffer[] = [];
  private partialBytes = 0;
  private stdinBytes = 0;
  /** The line number of the next line of the body (the request line was line 1). */
  private lineNumber = 2;
  private sawClose = false;
  private readonly maxLineBytes: number;

  constructor(
    private readonly limits: StdinLimits,
    private readonly meter: CpuMeter = UNMETERED,
  ) {
    super();
    this.maxLineBytes = limits.maxLineBytes ?? STDIN_LINE_MAX_BYTES;
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    const started = performance.now();
    try {
      let from = 0;
      for (let nl = chunk.indexOf(NEWLINE); nl >= 0; nl = chunk.indexOf(NEWLINE, from)) {
        this.addPartial(chunk.subarray(from, nl));
        const line = this.partial.length === 1 ? this.partial[0]! : Buffer.concat(this.partial);
        this.partial = [];
        this.partialBytes = 0;
        this.line(line);
        from = nl + 1;
      }
      if (from < chunk.length) this.addPartial(chunk.subarray(from));
    } catch (err) {
      return done(err as Error);
    }
    const wait = this.meter.charge(performance.now() - started);
    if (wait > 0) setTimeout(done, wait);
    else done();
  }

  override _flush(done: TransformCallback): void {
    try {
      if (this.partialBytes > 0) this.line(Buffer.concat(this.partial));
      done();
    } catch (err) {
      done(err as Error);
    }
  }

  private addPartial(piece: Buffer): void {
    if (piece.length === 0) return;
    this.partialBytes += piece.length;
    if (this.partialBytes > this.maxLineBytes) {
      throw new ProblemError(
        'payload-too-large',
        `stdin line ${this.lineNumber} exceeds ${this.maxLineBytes} bytes`,
      );
    }
    // A copy: the piece is a view of the caller's chunk, which may be a large socket read.
    this.partial.push(Buffer.from(piece));
  }

  /** Checks one complete line (without its newline) and passes it on. */
  private line(line: Buffer): void {
    const at = `stdin line ${this.lineNumber++}`;
    if (line.length === 0 || (line.length === 1 && line[0] === 0x0d)) return; // blank: skipped
    if (this.sawClose) throw new ProblemError('invalid-request', `${at} follows the close line`);
    let value: unknown;
    try {
      value = JSON.parse(line.toString('utf8'));
    } catch {
      throw new ProblemError('invalid-request', `${at} is not valid JSON`);
    }
    if (validClose(value)) {
      this.sawClose = true;
    } else if (validChunk(value)) {
      this.count(value.data, value.encoding, at);
    } else {
      throw new ProblemError(
        'invalid-request',
        `${at} is neither {"type":"stdin","data","encoding"?} nor {"type":"close"}`,
      );
    }
    this.push(line);
    this.push('\n');
  }

  /** Adds a chunk's decoded size to the call's total; refuses base64 the agent could not decode. */
  private count(data: string, encoding: 'utf-8' | 'base64' | undefined, at: string): void {
    let bytes: number;
    if (encoding === 'base64') {
      if (!BASE64.test(data)) {
        throw new ProblemError('invalid-request', `${at}: data is not valid base64`);
      }
      bytes = (data.length / 4) * 3 - (data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0);
    } else {
      bytes = Buffer.byteLength(data, 'utf8');
    }
    this.stdinBytes += bytes;
    if (this.stdinBytes > this.limits.maxBytes) {
      throw new ProblemError(
        'payload-too-large',
        `the streamed stdin exceeds ${this.limits.maxBytes} bytes (at ${at})`,
      );
    }
  }
}
