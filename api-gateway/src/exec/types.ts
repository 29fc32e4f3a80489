/**
 * The exec and file contract every transport implements. The shapes are the agent's (see
 * docs/architecture.md, "Agent HTTP API"), so both transports return identical results; the
 * REST API passes them through. The shapes are declared once, schema first, in
 * @sandbox-platform/api (crds/src/wire, ADR 0018).
 */
import type { Readable } from 'node:stream';

import type { ExecRequest as AgentExecRequest, ExecResult, WriteFileResult } from '@sandbox-platform/api';

import type { CpuMeter } from '../limits/cpu-meter.js';
import type { ExecTarget } from '../sessions/model.js';
import type { TraceContext } from '../tracing/tracing-config.js';

export type { ExecResult, ExecStreamEvent, OutputEncoding, WriteFileResult } from '@sandbox-platform/api';

/**
 * A command to run: the agent's exec body (the REST body without the gateway's own waitSeconds),
 * already validated and bounded by the route schema and config, its timeout resolved.
 */
export type ExecRequest = Omit<AgentExecRequest, 'timeoutSeconds'> & { timeoutSeconds: number };

/**
 * A file upload: the bytes in memory (MCP write_file, bounded by its body limit), or a stream
 * copied to the sandbox with backpressure (REST uploads) with its size when declared up front.
 */
export type UploadBody = Buffer | { stream: Readable; size: number | undefined };

/** A file download: a byte stream, with its size when known up front. */
export interface FileDownload {
  body: Readable;
  size: number | undefined;
}

/**
 * The part of an AbortSignal that calls use: an AbortSignal fits, and so does the lighter
 * per-request signal of routes/request-signal.ts. As with an AbortSignal, a listener added after
 * the abort is never called: check `aborted` first where that matters.
 */
export interface CancelSignal {
  readonly aborted: boolean;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/**
 * Memory a large answer may take from the shared budget, on behalf of the caller's response: what
 * is taken stays taken until that response is done (plugins/limits.ts), because the answer lives
 * on in the parsed result and the serialized response.
 */
export interface AnswerHold {
  /** Takes `bytes` more; false (nothing taken) when the budget cannot hold them. */
  tryTake(bytes: number): boolean;
}

/** Per-call options. */
export interface CallOptions {
  /** Aborted when the client goes away or the server shuts down. */
  signal?: CancelSignal;
  /** Where a large buffered answer takes its memory from (none: not counted). */
  hold?: AnswerHold;
  /** The caller's share of the gateway's CPU for reading answers (none: not metered). */
  meter?: CpuMeter;
  /**
   * Tracing on: the trace context of the request this call serves (its route passes
   * `request.traceContext` down, tracing/request-trace.ts); the agent and Kubernetes calls are its
   * span's children. Absent: no span (tracing off, or work of no request).
   */
  trace?: TraceContext;
  /**
   * execStream only: the command's stdin as NDJSON stdin lines (already checked, exec/guards/stdin-guard.ts),
   * forwarded to the agent as they arrive (Agent transport only).
   */
  stdinLines?: Readable;
}

/** Runs commands and moves files in a Ready session. */
export interface ExecTransport {
  exec(target: ExecTarget, req: ExecRequest, opts?: CallOptions): Promise<ExecResult>;
  /** Resolves once the upstream accepted the command; the stream then yields NDJSON lines. */
  execStream(target: ExecTarget, req: ExecRequest, opts?: CallOptions): Promise<Readable>;
  writeFile(target: ExecTarget, path: string, data: UploadBody, opts?: CallOptions): Promise<WriteFileResult>;
  /** Rejects with payload-too-large when the file exceeds maxBytes. */
  readFile(target: ExecTarget, path: string, maxBytes: number, opts?: CallOptions): Promise<FileDownload>;
}
