/**
 * One code context's Python engine (docs/adr/0033-code-interpreter.md): `kernel-bridge.py`,
 * an IPython shell in that one process (its own process group, IPYTHONDIR in the agent's private
 * directory) that runs cells sent as NDJSON on its stdin and answers NDJSON on its stdout. No
 * Jupyter kernel and no ZeroMQ: under gVisor every thread wake-up of ipykernel cost milliseconds
 * per run and its imports seconds per start (ADR 0033, "In-process engine"). The agent owns the
 * process: interrupts are its SIGINT to the group, a restart kills it and starts another.
 *
 * The engine runs as the sandbox's user next to the sandbox's code, so its lines are read like any
 * other output of the sandbox: bounded per line, parsed, checked; a violation ends the kernel.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';

import { CODE_DISPLAY_MAX_BYTES, CODE_ITEM_MAX_BYTES, CODE_STREAM_MAX_BYTES } from '@sandbox-platform/api';

import { NdjsonLineReader } from '../http/ndjson-lines.js';
import { errorMessage, type Logger } from '../log.js';
import { type BridgeLine, parseBridgeLine } from './bridge-lines.js';

/** Longest line the bridge may write: a display of every item allowed, JSON-escaped, plus slack. */
export const BRIDGE_LINE_MAX_BYTES = CODE_DISPLAY_MAX_BYTES + 1024 * 1024;
/** Bytes of a process's stderr kept to explain a failed start. */
const STDERR_TAIL_BYTES = 4096;
/** How long an exited process's stderr may take to end before its exit is reported. */
const STDERR_DRAIN_MS = 200;

/** How to start kernels; the composition root fills it from config. */
export interface KernelSpec {
  /** The Python interpreter (PATH lookup unless absolute). */
  python: string;
  /** The bridge script (kernel-bridge.py). */
  bridgePath: string;
  /** Working directory of the kernel (the workspace). */
  workspace: string;
  /** The kernel's environment (the shell's, with the session env). */
  env: () => NodeJS.ProcessEnv;
  /** Longest wait for the kernel to answer. */
  startTimeoutMs: number;
  logger: Logger;
}

/** The kernel cannot run here (no IPython in the image, a crash at start, no answer in time). */
export class KernelStartError extends Error {
  override readonly name = 'KernelStartError';
}

/** What a kernel reports to its context. */
export interface KernelEvents {
  /** A line of the running execution (its id names it). */
  line(line: BridgeLine): void;
  /** The engine is gone (exit, kill, protocol violation); called once. */
  gone(reason: string): void;
}

/** See the module comment. */
export class Kernel {
  private ended = false;
  private readonly exited: Promise<void>;

  private constructor(
    private readonly engine: ChildProcess,
    private readonly dir: string,
    private readonly logger: Logger,
  ) {
    this.exited = new Promise<void>((r) => engine.once('close', () => r()));
  }

  /** Process id of the engine (also its process group). */
  get pid(): number {
    return this.engine.pid ?? 0;
  }

  /** Starts a kernel in `dir` (created; removed when it ends) and resolves once it answers. */
  static async start(spec: KernelSpec, dir: string, events: KernelEvents): Promise<Kernel> {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const env = {
      ...spec.env(),
      // matplotlib's inline backend, as ipykernel sets it: figures come back as image/png displays.
      MPLBACKEND: 'module://matplotlib_inline.backend_inline',
      IPYTHONDIR: join(dir, 'ipython'),
    };
    const limits = [CODE_STREAM_MAX_BYTES, CODE_ITEM_MAX_BYTES, CODE_DISPLAY_MAX_BYTES].map(String);
    const engine = spawn(spec.python, [spec.bridgePath, ...limits], {
      cwd: spec.workspace,
      env,
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    return new Kernel(engine, dir, spec.logger).started(spec, events);
  }

  private async started(spec: KernelSpec, events: KernelEvents): Promise<Kernel> {
    const stderrTail = tail(this.engine);
    let ready!: () => void;
    let failed!: (err: Error) => void;
    const answer = new Promise<void>((resolve, reject) => ((ready = resolve), (failed = reject)));
    const fail = (why: string): void => {
      const detail = stderrTail();
      failed(new KernelStartError(detail ? `${why}: ${detail}` : why));
      this.stop(why);
    };
    let up = false;
    const gone = (why: string): void => {
      if (!up) fail(why);
      else if (this.stop(why)) events.gone(why);
    };
    this.engine.once('error', (err) => gone(`the kernel cannot be started (${err.message})`));
    // Its last stderr lines explain a failed start: let them arrive before reporting.
    this.engine.once('exit', (code, signal) => {
      const why = `the kernel exited (${signal ?? `code ${code}`})`;
      settled(this.engine.stderr).then(
        () => gone(why),
        () => gone(why),
      );
    });
    this.engine.stdin?.on('error', () => undefined); // a gone engine is reported by its exit
    void this.readLines((line) => {
      if (line.type === 'ready') {
        up = true;
        ready();
      } else if (line.type === 'fatal') gone(`the kernel bridge failed: ${line.message}`);
      else events.line(line);
    }).catch((err: unknown) => gone(`the kernel bridge broke the protocol: ${errorMessage(err)}`));
    const timer = setTimeout(
      () => fail(`the kernel did not answer within ${spec.startTimeoutMs / 1000} s`),
      spec.startTimeoutMs,
    );
    try {
      await answer;
      return this;
    } finally {
      clearTimeout(timer);
    }
  }

  private async readLines(onLine: (line: BridgeLine) => void): Promise<void> {
    const reader = new NdjsonLineReader(this.engine.stdout as AsyncIterable<Buffer>);
    for (
      let raw = await reader.next(BRIDGE_LINE_MAX_BYTES);
      raw;
      raw = await reader.next(BRIDGE_LINE_MAX_BYTES)
    ) {
      if (this.ended) return;
      onLine(parseBridgeLine(raw));
    }
  }

  /** Sends code to run; its lines come to `events.line` with this id. */
  execute(id: string, code: string): void {
    this.engine.stdin?.write(JSON.stringify({ op: 'execute', id, code }) + '\n');
  }

  /** SIGINT to the engine's process group: Python raises KeyboardInterrupt in the running cell. */
  interrupt(): void {
    signalGroup(this.engine, 'SIGINT');
  }

  /** Kills the engine's process group; true the first time. */
  stop(reason: string): boolean {
    if (this.ended) return false;
    this.ended = true;
    this.logger.debug('kernel stopped', { pid: this.pid, reason });
    signalGroup(this.engine, 'SIGKILL');
    void this.exited
      .then(() => rm(this.dir, { recursive: true, force: true }))
      .catch((err: unknown) => {
        this.logger.warn('cannot remove a kernel directory', { error: errorMessage(err) });
      });
    return true;
  }

  /** Resolves once the engine has exited (after stop). */
  closed(): Promise<void> {
    return this.exited;
  }
}

/** Resolves when a stream ended, or after STDERR_DRAIN_MS (a grandchild may hold it open). */
function settled(stream: NodeJS.ReadableStream | null): Promise<void> {
  if (!stream) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, STDERR_DRAIN_MS);
    stream.once('end', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // Already gone: the exit handler reports it.
  }
}

/** Keeps the last STDERR_TAIL_BYTES of a child's stderr; returns a reader of them as one line. */
function tail(child: ChildProcess): () => string {
  let kept = Buffer.alloc(0);
  child.stderr?.on('data', (chunk: Buffer) => {
    kept = Buffer.concat([kept, chunk]);
    if (kept.length > STDERR_TAIL_BYTES) kept = kept.subarray(kept.length - STDERR_TAIL_BYTES);
  });
  return () => {
    const lines = kept.toString('utf8').trim().split('\n');
    return (lines[lines.length - 1] ?? '').slice(0, 512);
  };
}
