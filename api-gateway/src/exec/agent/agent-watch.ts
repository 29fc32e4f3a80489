/**
 * File watching of a session over the Agent transport (ADR 0033): the agent's `GET /v1/watch`
 * with the session's token. Its NDJSON is checked line by line: each line at most
 * WATCH_LINE_MAX_BYTES, parsed and validated (a watching line first, changes and overflows, an
 * end line last), and handed on as objects. A watch has no total size (it may run for hours); the
 * gateway holds at most one partial line and, through backpressure, a few lines per watch: a
 * caller that does not read stops the reads, and the agent's bounded queue reports the overflow.
 */
import { Transform, type TransformCallback, type Readable } from 'node:stream';

import {
  AGENT_PATHS,
  WATCH_LINE_MAX_BYTES,
  watchEventSchema,
  type WatchLine,
  watchStatusEventSchema,
} from '@sandbox-platform/api';
import { Ajv, type ValidateFunction } from 'ajv';

import { ProblemError } from '../../errors.js';
import type { ExecTarget } from '../../sessions/model.js';
import { checkSchema } from './agent-json.js';
import type { AgentTransport } from './agent-transport.js';
import { AgentProtocolError } from './agent-wire.js';
import type { CallOptions } from '../types.js';

/** Longest a watch runs before the gateway ends it (`timeout`; the caller watches again). */
export const MAX_WATCH_SECONDS = 3600;
/** Deadline of the agent's answer to the watch request itself (the headers). */
const OPEN_TIMEOUT_MS = 15_000;
const NEWLINE = 0x0a;

const ajv = new Ajv({ allErrors: false, strict: true });
const validateChange: ValidateFunction<WatchLine> = ajv.compile<WatchLine>(watchEventSchema);
const validateStatus: ValidateFunction<WatchLine> = ajv.compile<WatchLine>(watchStatusEventSchema);

/** What the watch route calls for an Agent session. */
export interface WatchTransport {
  /** The validated lines (object mode); resolves once the agent answered 200. */
  open(
    target: ExecTarget,
    query: { path?: string; recursive?: boolean },
    opts?: CallOptions,
  ): Promise<Readable>;
}

/** WatchTransport over the agent's HTTP API. */
export class AgentWatch implements WatchTransport {
  constructor(private readonly agent: AgentTransport) {}

  async open(
    target: ExecTarget,
    query: { path?: string; recursive?: boolean },
    opts: CallOptions = {},
  ): Promise<Readable> {
    const search = new URLSearchParams();
    if (query.path !== undefined) search.set('path', query.path);
    if (query.recursive !== undefined) search.set('recursive', String(query.recursive));
    const path = `${AGENT_PATHS.watch}?${search.toString()}`;
    // The transport's deadline covers the whole answer: the route ends the watch before it.
    const deadlineAt = Date.now() + MAX_WATCH_SECONDS * 1000 + OPEN_TIMEOUT_MS;
    const res = await this.agent.send(target, { method: 'GET', path, token: '' }, deadlineAt, opts);
    await this.agent.expectOk(res, target, Date.now() + OPEN_TIMEOUT_MS);
    const guard = new WatchGuard();
    const upstream = res.body;
    upstream.on('error', (err) => guard.destroy(this.agent.streamProblem(err, target)));
    guard.on('close', () => upstream.destroy());
    return upstream.pipe(guard);
  }
}

/** Agent NDJSON -> validated WatchLine objects. */
export class WatchGuard extends Transform {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private lines = 0;
  private ended = false;

  constructor() {
    super({ readableObjectMode: true, readableHighWaterMark: 64 });
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    try {
      let start = 0;
      for (let nl = chunk.indexOf(NEWLINE); nl >= 0; nl = chunk.indexOf(NEWLINE, start)) {
        const piece = chunk.subarray(start, nl);
        this.line(this.pendingBytes > 0 ? this.takeLine(piece) : piece);
        start = nl + 1;
      }
      if (start < chunk.length) {
        this.pendingBytes += chunk.length - start;
        if (this.pendingBytes > WATCH_LINE_MAX_BYTES) {
          throw new AgentProtocolError(`watch line longer than ${WATCH_LINE_MAX_BYTES} bytes`);
        }
        this.pending.push(Buffer.from(chunk.subarray(start)));
      }
      cb();
    } catch (err) {
      cb(toProblem(err));
    }
  }

  override _flush(cb: TransformCallback): void {
    try {
      if (this.pendingBytes > 0) this.line(this.takeLine(Buffer.alloc(0)));
      cb();
    } catch (err) {
      cb(toProblem(err));
    }
  }

  private takeLine(tail: Buffer): Buffer {
    const line = Buffer.concat([...this.pending, tail], this.pendingBytes + tail.length);
    this.pending = [];
    this.pendingBytes = 0;
    if (line.length > WATCH_LINE_MAX_BYTES) {
      throw new AgentProtocolError(`watch line longer than ${WATCH_LINE_MAX_BYTES} bytes`);
    }
    return line;
  }

  private line(bytes: Buffer): void {
    if (bytes.length === 0) return;
    if (this.ended) throw new AgentProtocolError('watch continues after its end line');
    let value: unknown;
    try {
      value = JSON.parse(bytes.toString('utf8'));
    } catch {
      throw new AgentProtocolError('watch line is not valid JSON');
    }
    const type = (value as { type?: unknown } | null)?.type;
    const status = type === 'watching' || type === 'overflow' || type === 'end';
    const line = checkSchema(value, status ? validateStatus : validateChange);
    if ((this.lines++ === 0) !== (line.type === 'watching')) {
      throw new AgentProtocolError('a watch starts with one watching line');
    }
    if (line.type === 'end') this.ended = true;
    this.push(line);
  }
}

function toProblem(err: unknown): Error {
  if (err instanceof AgentProtocolError) {
    return new ProblemError('agent-protocol-error', `the sandbox agent's watch is malformed: ${err.message}`);
  }
  return err as Error;
}
