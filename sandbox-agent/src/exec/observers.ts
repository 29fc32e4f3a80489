/**
 * The two ways a command's output reaches the caller: collected into one JSON response, or
 * streamed as NDJSON events while the command runs.
 */
import type { ServerResponse } from 'node:http';

import type { OutputStream } from '../shell/bash-process.js';
import type { OutputObserver } from '../shell/execution.js';
import type { ExecResult } from '../shell/persistent-shell.js';
import { ChunkEncoder, encodeOutput, type EncodedOutput, trimIncompleteUtf8 } from './encoding.js';

/** The `POST /v1/exec` response body. */
export interface ExecResponse {
  stdout: string;
  stderr: string;
  stdoutEncoding: EncodedOutput['encoding'];
  stderrEncoding: EncodedOutput['encoding'];
  exitCode: number;
  durationMs: number;
  truncated: boolean;
  timedOut: boolean;
  shellReset: boolean;
}

/** Collects output (already capped by the shell) for a single JSON response. */
export class OutputCollector implements OutputObserver {
  private readonly chunks: Record<OutputStream, Buffer[]> = { stdout: [], stderr: [] };

  onOutput(stream: OutputStream, chunk: Buffer): void {
    this.chunks[stream].push(chunk);
  }

  /** The response body for a finished command. */
  response(result: ExecResult): ExecResponse {
    const stdout = this.encoded('stdout', result);
    const stderr = this.encoded('stderr', result);
    return {
      stdout: stdout.data,
      stderr: stderr.data,
      stdoutEncoding: stdout.encoding,
      stderrEncoding: stderr.encoding,
      exitCode: result.exitCode,
      durationMs: result.durationMs,
      truncated: result.truncated,
      timedOut: result.timedOut,
      shellReset: result.shellReset,
    };
  }

  private encoded(stream: OutputStream, result: ExecResult): EncodedOutput {
    const bytes = Buffer.concat(this.chunks[stream]);
    return encodeOutput(result.truncatedStreams[stream] ? trimIncompleteUtf8(bytes) : bytes);
  }
}

/** NDJSON content type of the streaming exec. */
export const NDJSON = 'application/x-ndjson';

/**
 * Writes `{"type":"stdout"|"stderr","data","encoding"}` lines as output arrives, then one
 * `{"type":"exit",...}` line. Headers go out when the command leaves the queue, so a 503 can
 * still be sent while it waits. Memory stays bounded: the shell caps each stream.
 */
export class NdjsonWriter implements OutputObserver {
  private readonly encoders: Record<OutputStream, ChunkEncoder> = {
    stdout: new ChunkEncoder(),
    stderr: new ChunkEncoder(),
  };

  constructor(private readonly res: ServerResponse) {}

  onStart(): void {
    this.res.writeHead(200, { 'content-type': NDJSON, 'cache-control': 'no-store' });
    this.res.flushHeaders();
  }

  onOutput(stream: OutputStream, chunk: Buffer): void {
    this.write(stream, this.encoders[stream].push(chunk));
  }

  /** Flushes split characters, writes the exit event and ends the response. */
  finish(result: ExecResult): void {
    for (const stream of ['stdout', 'stderr'] as const) {
      this.write(stream, this.encoders[stream].flush(result.truncatedStreams[stream]));
    }
    const { exitCode, durationMs, truncated, timedOut, shellReset } = result;
    this.res.end(
      `${JSON.stringify({ type: 'exit', exitCode, durationMs, truncated, timedOut, shellReset })}\n`,
    );
  }

  private write(stream: OutputStream, encoded: EncodedOutput | undefined): void {
    if (!encoded || this.res.destroyed) return;
    this.res.write(`${JSON.stringify({ type: stream, data: encoded.data, encoding: encoded.encoding })}\n`);
  }
}
