/**
 * The guard of a followed process output (`GET /v1/processes/<id>/output/stream`): the agent's
 * NDJSON passes line by line, each line parsed, validated against the wire contract
 * (processOutputEventSchema, then one exitEventSchema line) and re-serialized, so the caller only
 * receives lines of the contract. Unlike an exec stream a follow has no total size (a server may
 * log for days); it is bounded per line and in time (the route's deadline), and memory held is one
 * partial line at most. A violation destroys the stream with 502 `agent-protocol-error`.
 */
import { Transform, type TransformCallback } from 'node:stream';

import type { ExitEvent, ProcessOutputEvent } from '@sandbox-platform/api';

import { ProblemError } from '../../errors.js';
import type { CpuMeter } from '../../limits/cpu-meter.js';
import { checkSchema, parseBounded } from '../agent/agent-json.js';
import { AgentProtocolError } from '../agent/agent-wire.js';
import { validateExitLine, validateProcessOutputEvent } from '../agent/process-json.js';

/**
 * Longest line accepted: the agent writes at most 64 KiB of output per line, which JSON escaping
 * makes at most 6 times longer (\u0000), plus the line's other members.
 */
export const FOLLOW_LINE_MAX_BYTES = 64 * 1024 * 6 + 1024;
const NEWLINE = 0x0a;

/** Followed NDJSON from the agent -> validated NDJSON to the caller. */
export class ProcessFollowGuard extends Transform {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private exited = false;
  /** Ended by the gateway before the exit line (the follow's deadline): no exit line is owed. */
  private cut = false;

  /** `meter`: charged with the CPU each chunk costs; while in debt, the next chunk waits. */
  constructor(private readonly meter?: CpuMeter) {
    super();
  }

  /** True once the exit line passed (a stream cut before it ended early, by deadline or failure). */
  get complete(): boolean {
    return this.exited;
  }

  /** Ends the stream at a line boundary without an exit line (the caller follows again). */
  endEarly(): void {
    this.cut = true;
    this.pending = [];
    this.pendingBytes = 0;
    this.end();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    const started = this.meter ? performance.now() : 0;
    try {
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
      if (this.pendingBytes > 0 && !this.cut) this.line(this.takeLine(Buffer.alloc(0)));
      if (!this.exited && !this.cut) throw new AgentProtocolError('stream ended without an exit event');
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
      if (this.pendingBytes > FOLLOW_LINE_MAX_BYTES) {
        throw new AgentProtocolError(`stream line longer than ${FOLLOW_LINE_MAX_BYTES} bytes`);
      }
      this.pending.push(Buffer.from(chunk.subarray(start))); // a copy: the socket's buffer is not kept
    }
  }

  private takeLine(tail: Buffer): Buffer {
    const line = Buffer.concat([...this.pending, tail], this.pendingBytes + tail.length);
    this.pending = [];
    this.pendingBytes = 0;
    if (line.length > FOLLOW_LINE_MAX_BYTES) {
      throw new AgentProtocolError(`stream line longer than ${FOLLOW_LINE_MAX_BYTES} bytes`);
    }
    return line;
  }

  private line(bytes: Buffer): void {
    if (bytes.length === 0) return;
    if (this.exited) throw new AgentProtocolError('stream continues after the exit event');
    const value = parseBounded(bytes);
    const isExit = (value as { type?: unknown } | null)?.type === 'exit';
    const ev = isExit
      ? checkSchema<ExitEvent>(value, validateExitLine)
      : checkSchema<ProcessOutputEvent>(value, validateProcessOutputEvent);
    if (ev.type === 'exit') this.exited = true;
    this.push(JSON.stringify(ev) + '\n');
  }
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
