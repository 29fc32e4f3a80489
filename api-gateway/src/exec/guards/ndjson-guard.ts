/**
 * The guard of a streamed exec answer (POST /v1/exec/stream): the agent's NDJSON passes through
 * it line by line and comes out re-serialized, so the caller only ever receives lines of the
 * contract. An output line already in the form re-serialization would give it (canonical-event.ts:
 * what the agent writes) is checked and counted without parsing and passed on as it came: the same
 * bytes (a line that came in several socket reads as those pieces, not joined). The stream is
 * capped like a buffered answer: at most `maxBytes` of NDJSON, at most the output cap of decoded
 * bytes per output stream, lines no longer than a full event can be, and nothing after the exit
 * event. A violation destroys the stream with a ProblemError
 * (`agent-answer-too-large` or `agent-protocol-error`); memory held is one partial line at most
 * (in socket buffers at most twice its size).
 */
import { Transform, type TransformCallback } from 'node:stream';

import { ProblemError } from '../../errors.js';
import {
  checkOutputCap,
  checkSchema,
  outputBytes,
  parseBounded,
  validateExitEvent,
  validateOutputEvent,
  type ExitEvent,
  type OutputEvent,
} from '../agent/agent-json.js';
import type { CpuMeter } from '../../limits/cpu-meter.js';
import { AgentProtocolError } from '../agent/agent-wire.js';
import { canonicalOutput, canonicalOutputOfPieces } from './canonical-event.js';

/** Limits of one stream. */
export interface NdjsonLimits {
  /** Bytes of NDJSON accepted in all (the buffered answer's limit). */
  maxBytes: number;
  /** Decoded bytes per output stream (stdout, stderr): the agent's output cap. */
  maxOutputBytes: number;
}

const NEWLINE = 0x0a;
/** Lines handled in one turn of the event loop (a few hundred microseconds). */
const LINES_PER_TURN = 128;
/** A line's bytes beyond its data: `{"type":"stdout","data":"","encoding":"base64"}` and slack. */
const LINE_OVERHEAD_BYTES = 1024;

/** Streamed NDJSON from the agent -> validated NDJSON to the caller. */
export class NdjsonGuard extends Transform {
  private readonly pending: Buffer[] = [];
  private pendingBytes = 0;
  private total = 0;
  private readonly decoded = { stdout: 0, stderr: 0 };
  private exited = false;
  private readonly maxLineBytes: number;

  /** `meter`: charged with the CPU each chunk costs; while in debt, the next chunk waits (backpressure). */
  constructor(
    private readonly limits: NdjsonLimits,
    private readonly meter?: CpuMeter,
  ) {
    super();
    // JSON escaping makes a character up to 6 bytes (\u0000).
    this.maxLineBytes = limits.maxOutputBytes * 6 + LINE_OVERHEAD_BYTES;
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.total += chunk.length;
    if (this.total > this.limits.maxBytes) {
      const detail = `the sandbox agent's stream exceeds ${this.limits.maxBytes} bytes`;
      return cb(new ProblemError('agent-answer-too-large', detail));
    }
    this.linesFrom(chunk, 0, cb);
  }

  /**
   * Handles the lines of `chunk` from `start`, at most LINES_PER_TURN per turn of the event loop
   * (the rest after a setImmediate), so a chunk of thousands of tiny events never holds the loop
   * for long; each turn's CPU is charged to the meter, and a key in debt waits before the next.
   */
  private linesFrom(chunk: Buffer, start: number, cb: TransformCallback): void {
    const started = this.meter ? performance.now() : 0;
    let next: number;
    try {
      next = this.lines(chunk, start);
    } catch (err) {
      return cb(toProblem(err));
    }
    const wait = this.meter ? this.meter.charge(performance.now() - started) : 0;
    const go = next < 0 ? (): void => cb() : (): void => this.linesFrom(chunk, next, cb);
    if (wait > 0) setTimeout(go, wait);
    else if (next < 0) cb();
    else setImmediate(go);
  }

  override _flush(cb: TransformCallback): void {
    try {
      if (this.pendingBytes > 0) this.line(this.takePending(Buffer.from('\n')));
      if (!this.exited) throw new AgentProtocolError('stream ended without an exit event');
      cb();
    } catch (err) {
      cb(toProblem(err));
    }
  }

  /**
   * Handles the complete lines of a chunk from `from`; the index to go on from after
   * LINES_PER_TURN lines, or -1 when the chunk is done (a partial last line waits for the next).
   */
  private lines(chunk: Buffer, from: number): number {
    let start = from;
    let handled = 0;
    for (let nl = chunk.indexOf(NEWLINE, start); nl >= 0; nl = chunk.indexOf(NEWLINE, start)) {
      if (handled++ === LINES_PER_TURN) return start;
      // The line with its newline: a canonical line goes on as it is, without a copy.
      const piece = chunk.subarray(start, nl + 1);
      if (this.pendingBytes === 0) this.line(piece);
      else this.splitLine(piece);
      start = nl + 1;
    }
    if (start < chunk.length) {
      const rest = chunk.subarray(start);
      this.pendingBytes += rest.length;
      if (this.pendingBytes > this.maxLineBytes) {
        throw new AgentProtocolError(`stream line longer than ${this.maxLineBytes} bytes`);
      }
      // A small rest is copied, so the socket's buffer it is cut from is not kept alive for it; a
      // rest of at least half that buffer is kept as it is (at most twice the pending bytes held):
      // a long line spans many chunks, and copying each cost the gateway as much CPU as checking
      // the lines on a streamed `cat` (its profile in make bench-gateway-interactive).
      this.pending.push(rest.length * 2 >= rest.buffer.byteLength ? rest : Buffer.from(rest));
    }
    return -1;
  }

  private takePending(tail: Buffer): Buffer {
    const line = Buffer.concat([...this.pending, tail], this.pendingBytes + tail.length);
    this.pending.length = 0;
    this.pendingBytes = 0;
    if (line.length - 1 > this.maxLineBytes) {
      throw new AgentProtocolError(`stream line longer than ${this.maxLineBytes} bytes`);
    }
    return line;
  }

  /**
   * A line that came in pieces (the pending ones and `tail`, which ends in the newline): a
   * canonical output line goes on as its pieces, checked and counted where they lie
   * (canonicalOutputOfPieces); any other is joined and takes line().
   */
  private splitLine(tail: Buffer): void {
    const bytes = this.pendingBytes + tail.length;
    if (bytes - 1 > this.maxLineBytes) {
      throw new AgentProtocolError(`stream line longer than ${this.maxLineBytes} bytes`);
    }
    this.pending.push(tail);
    const canonical = this.exited ? undefined : canonicalOutputOfPieces(this.pending);
    if (!canonical) return this.line(this.takePending(this.pending.pop()!));
    this.count(canonical.type, canonical.decodedBytes);
    for (const piece of this.pending) this.push(piece);
    this.pending.length = 0;
    this.pendingBytes = 0;
  }

  /**
   * One complete line, ending in its newline: validated, counted, passed on re-serialized (a
   * canonical output line as it came, which is the same bytes).
   */
  private line(withNewline: Buffer): void {
    const bytes = withNewline.subarray(0, withNewline.length - 1);
    if (bytes.length === 0 || (bytes.length === 1 && bytes[0] === 0x0d)) return;
    if (this.exited) throw new AgentProtocolError('stream continues after the exit event');
    const canonical = canonicalOutput(bytes);
    if (canonical) {
      this.count(canonical.type, canonical.decodedBytes);
      this.push(withNewline);
      return;
    }
    const value = parseBounded(bytes);
    const ev = isExit(value)
      ? checkSchema<ExitEvent>(value, validateExitEvent)
      : checkSchema<OutputEvent>(value, validateOutputEvent);
    if (ev.type === 'exit') {
      this.exited = true;
    } else {
      checkOutputCap(ev.data, ev.encoding, this.limits.maxOutputBytes, ev.type);
      this.count(ev.type, outputBytes(ev.data, ev.encoding));
    }
    this.push(JSON.stringify(ev) + '\n');
  }

  /** Adds an output event's decoded bytes to its stream's total, which the output cap bounds. */
  private count(type: 'stdout' | 'stderr', bytes: number): void {
    if (bytes > this.limits.maxOutputBytes) {
      throw new AgentProtocolError(
        `${type} is ${bytes} bytes, over the output cap of ${this.limits.maxOutputBytes}`,
      );
    }
    this.decoded[type] += bytes;
    if (this.decoded[type] > this.limits.maxOutputBytes) {
      throw new AgentProtocolError(`${type} exceeds the output cap of ${this.limits.maxOutputBytes}`);
    }
  }
}

/** True when the value claims to be the exit event (which schema to check it against). */
function isExit(value: unknown): boolean {
  return typeof value === 'object' && value !== null && (value as { type?: unknown }).type === 'exit';
}

function toProblem(err: unknown): Error {
  if (err instanceof AgentProtocolError) {
    return new ProblemError(
      'agent-protocol-error',
      `the sandbox agent's stream is malformed: ${err.message}`,
    );
  }
  return err as Error;
}
