/**
 * The two ways a command's output reaches the caller: collected into one JSON response, or
 * streamed as NDJSON events while the command runs.
 */
import type { ServerResponse } from 'node:http';

import { type ExecExitEvent, type ExecResult, NDJSON_CONTENT_TYPE } from '@sandbox-platform/api';

import type { OutputStream } from '../shell/bash-process.js';
import type { OutputObserver } from '../shell/execution.js';
import type { ExecResult as ShellResult } from '../shell/persistent-shell.js';
import { ByteBuffer } from './byte-buffer.js';
import { ChunkEncoder, encodeOutput, type EncodedOutput, trimIncompleteUtf8 } from './encoding.js';

/** The `POST /v1/exec` response body (the shared contract's ExecResult). */
export type ExecResponse = ExecResult;

/** Collects output (already capped by the shell) for a single JSON response. */
export class OutputCollector implements OutputObserver {
  // Copied, not kept chunk by chunk: see byte-buffer.ts.
  private readonly bytes: Record<OutputStream, ByteBuffer> = {
    stdout: new ByteBuffer(),
    stderr: new ByteBuffer(),
  };

  onOutput(stream: OutputStream, chunk: Buffer): void {
    this.bytes[stream].append(chunk);
  }

  /** The response body for a finished command. */
  response(result: ShellResult): ExecResponse {
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

  private encoded(stream: OutputStream, result: ShellResult): EncodedOutput {
    const bytes = this.bytes[stream].bytes();
    return encodeOutput(result.truncatedStreams[stream] ? trimIncompleteUtf8(bytes) : bytes);
  }
}

/** NDJSON content type of the streaming exec. */
export const NDJSON = NDJSON_CONTENT_TYPE;

/** The part of the HTTP response the NDJSON writer uses (a narrow port, faked in tests). */
export type NdjsonSink = Pick<
  ServerResponse,
  'writeHead' | 'flushHeaders' | 'write' | 'end' | 'destroyed' | 'writableNeedDrain' | 'once'
>;

/**
 * Writes `{"type":"stdout"|"stderr","data","encoding"}` lines as output arrives, then one
 * `{"type":"exit",...}` line. Headers go out when the command leaves the queue, so a 503 can
 * still be sent while it waits. Memory stays bounded: the shell caps each stream, and while the
 * client does not keep up (the response needs a drain), output is gathered per stream and sent as
 * one line at the drain, instead of queueing one write (and its objects) per chunk: a command
 * writing byte by byte to a client that does not read would otherwise queue a line per byte.
 */
export class NdjsonWriter implements OutputObserver {
  private readonly encoders: Record<OutputStream, ChunkEncoder> = {
    stdout: new ChunkEncoder(),
    stderr: new ChunkEncoder(),
  };
  private readonly held: Record<OutputStream, ByteBuffer> = {
    stdout: new ByteBuffer(),
    stderr: new ByteBuffer(),
  };
  private waitingForDrain = false;

  constructor(private readonly res: NdjsonSink) {}

  onStart(): void {
    this.res.writeHead(200, { 'content-type': NDJSON, 'cache-control': 'no-store' });
    this.res.flushHeaders();
  }

  onOutput(stream: OutputStream, chunk: Buffer): void {
    if (this.res.writableNeedDrain) {
      this.held[stream].append(chunk);
      this.flushAtDrain();
      return;
    }
    this.flushHeld();
    this.write(stream, this.encoders[stream].push(chunk));
  }

  /** Flushes held output and split characters, writes the exit event and ends the response. */
  finish(result: ShellResult): void {
    this.flushHeld();
    for (const stream of ['stdout', 'stderr'] as const) {
      this.write(stream, this.encoders[stream].flush(result.truncatedStreams[stream]));
    }
    const { exitCode, durationMs, truncated, timedOut, shellReset, stdinError } = result;
    const exit: ExecExitEvent = { type: 'exit', exitCode, durationMs, truncated, timedOut, shellReset };
    if (stdinError !== undefined) exit.stdinError = stdinError;
    this.res.end(`${JSON.stringify(exit)}\n`);
  }

  private flushAtDrain(): void {
    if (this.waitingForDrain) return;
    this.waitingForDrain = true;
    this.res.once('drain', () => {
      this.waitingForDrain = false;
      this.flushHeld();
    });
  }

  private flushHeld(): void {
    for (const stream of ['stdout', 'stderr'] as const) {
      if (this.held[stream].length > 0)
        this.write(stream, this.encoders[stream].push(this.held[stream].take()));
    }
  }

  /**
   * One output line, exactly what JSON.stringify of `{type, data, encoding}` writes, built by hand
   * on the hot path: base64 needs no escaping and is ASCII, so it goes out as latin1 (a copy; as
   * UTF-8 every character is checked and the escaping scan runs for nothing: 5x slower measured on
   * 64 KiB chunks); text is escaped by JSON.stringify of the string alone.
   */
  private write(stream: OutputStream, encoded: EncodedOutput | undefined): void {
    if (!encoded || this.res.destroyed) return;
    if (encoded.encoding === 'base64') {
      this.res.write(`{"type":"${stream}","data":"${encoded.data}","encoding":"base64"}\n`, 'latin1');
    } else {
      this.res.write(`{"type":"${stream}","data":${JSON.stringify(encoded.data)},"encoding":"utf-8"}\n`);
    }
  }
}
