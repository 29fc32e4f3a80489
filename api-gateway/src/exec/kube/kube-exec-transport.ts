/**
 * The KubernetesExec transport: pods/exec over WebSocket through the API server, for images
 * without the agent. It runs on its own KubeConfig and Exec object that no REST call shares (the
 * lesson of the seed system that froze when a streaming exec patched a shared API client), and
 * returns exactly the Agent transport's result shape, deadline and output cap.
 */
import { PassThrough, Readable, type Writable } from 'node:stream';

import { SANDBOX_CONTAINER, WORKSPACE_DIR } from '@sandbox-platform/api';

import { ProblemError } from '../../errors.js';
import type { ExecTarget } from '../../sessions/model.js';
import type { TracedApi } from '../../tracing/tracing-config.js';
import type { ExecStatus } from './exec-status.js';
import {
  EXIT_NOT_FOUND,
  EXIT_PATH_FORBIDDEN,
  execArgv,
  readFileArgv,
  writeFileArgv,
} from './kube-exec-script.js';
import { CappedBuffer, encodeOutput } from '../output.js';
import { PodRun, StreamSink, type ExecSocket, type RunOutcome, type RunSpec } from './pod-run.js';
import type {
  CallOptions,
  ExecRequest,
  ExecResult,
  ExecTransport,
  FileDownload,
  ExecStreamEvent,
  UploadBody,
  WriteFileResult,
} from '../types.js';

/** One pods/exec call (no TTY). */
export interface PodExecCall {
  namespace: string;
  podName: string;
  container: string;
  command: string[];
  stdout: Writable;
  stderr: Writable;
  stdin: Readable | null;
  onStatus: (status: ExecStatus) => void;
}

/** Opens a pods/exec WebSocket (client-node's Exec in production, a fake in tests). */
export interface PodExecutor {
  exec(call: PodExecCall): Promise<ExecSocket>;
}

/** Options of the KubernetesExec transport. */
export interface KubeExecTransportOptions {
  executor: PodExecutor;
  /** Tracing on: the executor as a call under a request's trace context sees it (in a span). */
  traced?: TracedApi<PodExecutor>;
  /** Cap per stream, as the agent's. */
  maxOutputBytes: number;
  deadlineMarginMs: number;
  fileTimeoutMs: number;
  /** Commands travel in the exec URL's query string: bound them well below URL limits. */
  maxCommandBytes?: number;
  /** The sandbox workspace (the platform's /workspace; tests run the scripts elsewhere). */
  workspace?: string;
}

/** What a pods/exec call runs (a RunSpec without its sinks and signal). */
type Command = Pick<RunSpec, 'argv' | 'stdin' | 'timeoutMs'>;

/** Where a stream's bytes go (a CappedBuffer or a StreamSink). */
interface Sink {
  push(chunk: Buffer): unknown;
}

const V5 = 'v5.channel.k8s.io';
const DEFAULT_MAX_COMMAND_BYTES = 64 * 1024;

/** ExecTransport over pods/exec. */
export class KubernetesExecTransport implements ExecTransport {
  private readonly workspace: string;

  constructor(private readonly o: KubeExecTransportOptions) {
    this.workspace = o.workspace ?? WORKSPACE_DIR;
  }

  async exec(target: ExecTarget, req: ExecRequest, opts: CallOptions = {}): Promise<ExecResult> {
    this.checkSize(req);
    const out = new CappedBuffer(this.o.maxOutputBytes);
    const err = new CappedBuffer(this.o.maxOutputBytes);
    const started = await this.start(target, this.command(req), { out, err }, opts);
    const run = await started.done;
    const so = encodeOutput(out.bytes());
    const se = encodeOutput(err.bytes());
    return {
      stdout: so.data,
      stderr: se.data,
      stdoutEncoding: so.encoding,
      stderrEncoding: se.encoding,
      exitCode: run.exitCode,
      durationMs: run.durationMs,
      truncated: out.truncated || err.truncated,
      timedOut: run.timedOut,
      shellReset: false,
    };
  }

  async execStream(target: ExecTarget, req: ExecRequest, opts: CallOptions = {}): Promise<Readable> {
    this.checkSize(req);
    const lines = new PassThrough();
    const emit = (ev: ExecStreamEvent): void => void lines.write(JSON.stringify(ev) + '\n');
    const out = new StreamSink('stdout', this.o.maxOutputBytes, emit);
    const err = new StreamSink('stderr', this.o.maxOutputBytes, emit);
    const started = await this.start(target, this.command(req), { out, err }, opts);
    lines.on('close', () => started.cancel());
    started.done.then(
      (run) => {
        out.flush();
        err.flush();
        const truncated = out.truncated || err.truncated;
        emit({
          type: 'exit',
          exitCode: run.exitCode,
          durationMs: run.durationMs,
          truncated,
          timedOut: run.timedOut,
          shellReset: false,
        });
        lines.end();
      },
      (e: unknown) => lines.destroy(e instanceof Error ? e : new Error(String(e))),
    );
    return lines;
  }

  async writeFile(
    target: ExecTarget,
    path: string,
    data: UploadBody,
    opts: CallOptions = {},
  ): Promise<WriteFileResult> {
    const out = new CappedBuffer(1024);
    const err = new CappedBuffer(4096);
    const started = await this.start(
      target,
      { argv: writeFileArgv(path, this.workspace), stdin: data, timeoutMs: this.o.fileTimeoutMs },
      { out, err },
      opts,
    );
    const run = await started.done;
    checkFileExit(run, err);
    return { path, size: Number(out.bytes().toString('utf8').trim()) };
  }

  async readFile(
    target: ExecTarget,
    path: string,
    maxBytes: number,
    opts: CallOptions = {},
  ): Promise<FileDownload> {
    const out = new CappedBuffer(maxBytes);
    const err = new CappedBuffer(4096);
    const started = await this.start(
      target,
      { argv: readFileArgv(path, this.workspace), timeoutMs: this.o.fileTimeoutMs },
      { out, err },
      opts,
    );
    const run = await started.done;
    checkFileExit(run, err);
    if (out.truncated)
      throw new ProblemError('payload-too-large', `the file exceeds the limit of ${maxBytes} bytes`);
    const bytes = out.bytes();
    return { body: Readable.from([bytes]), size: bytes.length };
  }

  private checkSize(req: ExecRequest): void {
    const limit = this.o.maxCommandBytes ?? DEFAULT_MAX_COMMAND_BYTES;
    if (Buffer.byteLength(req.command) > limit) {
      throw new ProblemError(
        'invalid-request',
        `commands over ${limit} bytes are not supported with execTransport KubernetesExec`,
      );
    }
  }

  /** The pods/exec command of an exec call. */
  private command(req: ExecRequest): Command {
    return { argv: execArgv(req, this.workspace), timeoutMs: req.timeoutSeconds * 1000 };
  }

  /**
   * Opens the exec, its output going to the sinks; resolves once the API server accepted it, with
   * the run's completion.
   */
  private async start(
    target: ExecTarget,
    command: Command,
    sinks: { out: Sink; err: Sink },
    opts: CallOptions,
  ): Promise<{ done: Promise<RunOutcome>; cancel: () => void }> {
    const spec: RunSpec = {
      ...command,
      stdout: (c) => sinks.out.push(c),
      stderr: (c) => sinks.err.push(c),
      ...(opts.signal ? { signal: opts.signal } : {}),
    };
    const run = new PodRun(spec, this.o.deadlineMarginMs);
    const stdin = spec.stdin ? new PassThrough() : null;
    let socket: ExecSocket;
    try {
      const executor = opts.trace && this.o.traced ? this.o.traced(opts.trace) : this.o.executor;
      socket = await executor.exec({
        namespace: target.namespace,
        podName: target.podName,
        container: SANDBOX_CONTAINER,
        command: spec.argv,
        stdout: run.stdout,
        stderr: run.stderr,
        stdin,
        onStatus: (status) => run.onStatus(status),
      });
    } catch (cause) {
      run.dispose();
      throw new ProblemError('upstream-error', 'pods/exec through the API server failed', {
        cause,
        retryAfterSeconds: 1,
      });
    }
    run.attach(socket);
    if (stdin && spec.stdin) {
      if (socket.protocol !== V5) {
        socket.close();
        throw new ProblemError(
          'not-supported',
          'file upload over pods/exec needs an API server speaking v5.channel.k8s.io',
        );
      }
      if (Buffer.isBuffer(spec.stdin)) {
        stdin.end(spec.stdin);
      } else {
        // pipe: the upload is read as fast as the exec socket takes it (backpressure).
        const upload = spec.stdin.stream;
        upload.on('error', (err) => stdin.destroy(err));
        upload.pipe(stdin);
      }
    }
    return { done: run.done, cancel: () => run.cancel() };
  }
}

function checkFileExit(run: RunOutcome, err: CappedBuffer): void {
  if (run.exitCode === 0) return;
  if (run.exitCode === EXIT_PATH_FORBIDDEN)
    throw new ProblemError('path-forbidden', 'the path leaves the workspace');
  if (run.exitCode === EXIT_NOT_FOUND) throw new ProblemError('not-found', 'no such file');
  if (run.timedOut)
    throw new ProblemError('upstream-timeout', 'the file transfer did not finish within the deadline');
  const detail = err.bytes().toString('utf8').trim().slice(0, 500);
  throw new ProblemError(
    'upstream-error',
    `the file transfer failed (exit ${run.exitCode})${detail ? `: ${detail}` : ''}`,
  );
}
