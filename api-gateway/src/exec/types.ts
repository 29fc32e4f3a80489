/**
 * The exec and file contract every transport implements. The shapes are the agent's (see
 * docs/architecture.md, "Agent HTTP API"), so both transports return identical results.
 */
import type { Readable } from 'node:stream';

import type { ExecTarget } from '../sessions/model.js';

/** A command to run (already validated and bounded by the route schema and config). */
export interface ExecRequest {
  command: string;
  timeoutSeconds: number;
  cwd?: string;
  env?: Record<string, string>;
}

/** How a stream's bytes are encoded in JSON. */
export type OutputEncoding = 'utf-8' | 'base64';

/** The result of one command (the agent's `POST /v1/exec` response). */
export interface ExecResult {
  stdout: string;
  stderr: string;
  stdoutEncoding: OutputEncoding;
  stderrEncoding: OutputEncoding;
  exitCode: number;
  durationMs: number;
  truncated: boolean;
  timedOut: boolean;
  shellReset: boolean;
}

/** One NDJSON line of a streaming exec. */
export type StreamEvent =
  | { type: 'stdout' | 'stderr'; data: string; encoding: OutputEncoding }
  | {
      type: 'exit';
      exitCode: number;
      durationMs: number;
      truncated: boolean;
      timedOut: boolean;
      shellReset: boolean;
    };

/** Result of a file upload. */
export interface WriteFileResult {
  path: string;
  size: number;
}

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

/** Per-call options. */
export interface CallOptions {
  /** Aborted when the client goes away or the server shuts down. */
  signal?: CancelSignal;
}

/** Runs commands and moves files in a Ready session. */
export interface ExecTransport {
  exec(target: ExecTarget, req: ExecRequest, opts?: CallOptions): Promise<ExecResult>;
  /** Resolves once the upstream accepted the command; the stream then yields NDJSON lines. */
  execStream(target: ExecTarget, req: ExecRequest, opts?: CallOptions): Promise<Readable>;
  writeFile(target: ExecTarget, path: string, data: Buffer, opts?: CallOptions): Promise<WriteFileResult>;
  /** Rejects with payload-too-large when the file exceeds maxBytes. */
  readFile(target: ExecTarget, path: string, maxBytes: number, opts?: CallOptions): Promise<FileDownload>;
}
