/**
 * One background process: a `bash -c` started by the agent (not by the persistent shell) in its
 * own session and process group, its stdout and stderr read into rings, its exit recorded. It
 * outlives the call that started it and every later call, until it is removed or the agent stops.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { constants } from 'node:os';
import type { Writable } from 'node:stream';

import type { ProcessInfo } from '@sandbox-platform/api';

import type { Logger } from '../log.js';
import { errorMessage } from '../log.js';
import { sendSignal } from '../shell/processes.js';
import { OutputRing } from './output-ring.js';

/** The output streams of a process. */
export type ProcessStream = 'stdout' | 'stderr';

/** After bash exited, how long its pipes may stay open (held by its leftovers) before it counts as exited. */
export const DRAIN_AFTER_EXIT_MS = 500;

/**
 * Characters of the command a process description repeats: enough to recognise it, while a list
 * of 16 processes started with 1 MiB commands stays small (the gateway bounds agent answers).
 */
export const COMMAND_SHOWN_CHARS = 4096;

/** How to start one. */
export interface SpawnSpec {
  id: string;
  /** The command as the client sent it (for the process list). */
  command: string;
  cwd?: string;
  bashPath: string;
  /** The script bash runs (session env exports, cd, env, then the command). */
  script: string;
  /** bash's start directory (the workspace). */
  workspace: string;
  env: NodeJS.ProcessEnv;
  outputBytes: number;
  logger: Logger;
}

/** Thrown when bash cannot be started (no PID left, missing binary). */
export class SpawnError extends Error {
  override readonly name = 'SpawnError';
}

/** Longest script a spare bash takes (bytes; longer ones are spawned as before). */
export const SPARE_SCRIPT_MAX_BYTES = 64 * 1024 * 1024;
/** The last line of a script handed to a spare: what it read ends there, or it was cut. */
const SPARE_END = '# end of the script';

/**
 * What a spare bash runs until claimed: read its process's script from fd 3 to EOF (`read -N`
 * reads in chunks, `-d` alone a byte per call), close fd 3, and evaluate the script as `bash -c`
 * would run it. A script without its last line (the agent went away while writing it) is not run.
 */
const SPARE_READER = [
  `IFS= read -r -N ${SPARE_SCRIPT_MAX_BYTES} -u 3 __sbx_script`,
  'exec 3<&-',
  `[[ $__sbx_script == *$'\\n${SPARE_END}\\n' ]] || exit 125`,
  'eval "unset -v __sbx_script; $__sbx_script"',
].join('; ');

/** How to start a spare bash (what SpawnSpec says but the process's own script and identity). */
export type SpareSpec = Pick<SpawnSpec, 'bashPath' | 'workspace' | 'env' | 'logger'>;

/**
 * A bash started ahead of the next process start (the process table keeps one): Node's spawn
 * forks the whole agent (its cost grows with the agent's memory: 25 ms of a blocked event loop
 * under gVisor) and bash then starts up; a spare has done both when a start claims it, and
 * becomes the process as soon as it read its script. Same session, process group, environment,
 * directory and stdio as a spawned process; fd 3 (the script) is closed before the script runs.
 */
export class SpareBash {
  private gone = false;

  private constructor(
    readonly child: ChildProcess,
    readonly pid: number,
    /** The env the spare was started with: a claim checks it is still the table's. */
    readonly env: NodeJS.ProcessEnv,
  ) {
    child.once('exit', () => {
      this.gone = true;
    });
  }

  /** Starts one; rejects with {@link SpawnError} when it cannot be started. */
  static start(spec: SpareSpec): Promise<SpareBash> {
    const child = spawn(spec.bashPath, ['--noprofile', '--norc', '-c', SPARE_READER], {
      cwd: spec.workspace,
      env: spec.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
    });
    for (const stream of child.stdio.slice(1)) {
      stream?.on('error', (err) =>
        spec.logger.debug('spare bash pipe error', { pid: child.pid, error: errorMessage(err) }),
      );
    }
    return new Promise((resolve, reject) => {
      child.once('error', (err) =>
        reject(new SpawnError(`cannot start bash: ${errorMessage(err)}`, { cause: err })),
      );
      child.once('spawn', () => {
        // Later errors (none is expected of a child that started) are logged, never unhandled.
        child.on('error', (err) =>
          spec.logger.warn('spare bash error', { pid: child.pid, error: errorMessage(err) }),
        );
        resolve(new SpareBash(child, child.pid ?? -1, spec.env));
      });
    });
  }

  /** True while it waits for its script (it may have been killed meanwhile). */
  get waiting(): boolean {
    return !this.gone && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Hands it `script` (with the end line); the caller wires it as the process. */
  feed(script: string): void {
    const input = this.child.stdio[3] as Writable;
    // Closed once written: bash sees EOF, and the child's 'close' waits for every stdio stream.
    input.end(`${script}\n${SPARE_END}\n`, () => input.destroy());
  }

  /** Kills it (its group) and closes its pipes: not claimed, or no longer fit for a claim. */
  discard(): void {
    // Only while not reaped: the pid (and group id) of a reaped spare may be another's by now.
    if (this.waiting) sendSignal(-this.pid, 'SIGKILL');
    for (const stream of this.child.stdio) stream?.destroy();
  }
}

/** See the module comment. */
export class ManagedProcess {
  readonly startedAt = new Date();
  readonly output: Record<ProcessStream, OutputRing>;
  private exitStatus: { exitCode: number; signal?: string; at: Date } | undefined;
  private reapedAt: Date | undefined;
  private readonly listeners = new Set<() => void>();
  private markExited!: () => void;
  /** Resolves once the process counts as exited (bash ended, its pipes drained or the drain wait over). */
  readonly exited: Promise<void> = new Promise((resolve) => (this.markExited = resolve));

  private constructor(
    private readonly spec: SpawnSpec,
    private readonly child: ChildProcess,
    /** bash's pid, also its process group and session id. */
    readonly pid: number,
  ) {
    this.output = { stdout: new OutputRing(spec.outputBytes), stderr: new OutputRing(spec.outputBytes) };
  }

  /** Starts bash; rejects with {@link SpawnError} when it cannot be started. */
  static start(spec: SpawnSpec): Promise<ManagedProcess> {
    const child = spawn(spec.bashPath, ['--noprofile', '--norc', '-c', spec.script], {
      cwd: spec.workspace,
      env: spec.env,
      // Its own session and process group: signals go to the group, and a shell reset of the
      // persistent bash (which kills that bash's session) leaves it alone.
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return new Promise((resolve, reject) => {
      child.once('error', (err) =>
        reject(new SpawnError(`cannot start bash: ${errorMessage(err)}`, { cause: err })),
      );
      child.once('spawn', () => {
        const proc = new ManagedProcess(spec, child, child.pid ?? -1);
        proc.wire();
        resolve(proc);
      });
    });
  }

  /**
   * A spare bash claimed for `spec` (it must be waiting, and started with `spec.env`): it gets the
   * script and becomes the process, without a spawn on the start's path.
   */
  static claim(spare: SpareBash, spec: SpawnSpec): ManagedProcess {
    const proc = new ManagedProcess(spec, spare.child, spare.pid);
    proc.wire();
    spare.feed(spec.script);
    return proc;
  }

  get id(): string {
    return this.spec.id;
  }

  /** When bash exited (reaped), once it has. */
  get exitedAt(): Date | undefined {
    return this.reapedAt;
  }

  /** True until the process counts as exited. */
  get running(): boolean {
    return this.exitStatus === undefined;
  }

  /** Registers a callback for new output and the exit; returns its removal. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  /** Sends a signal to the whole process group; false when nothing is left to receive it. */
  signal(name: NodeJS.Signals): boolean {
    return sendSignal(-this.pid, name);
  }

  /** Stops reading its output (the process is being removed). */
  detach(): void {
    this.child.stdout?.destroy();
    this.child.stderr?.destroy();
    this.listeners.clear();
  }

  /** The process as the wire describes it. */
  info(): ProcessInfo {
    const info: ProcessInfo = {
      id: this.spec.id,
      pid: this.pid,
      command: this.spec.command.slice(0, COMMAND_SHOWN_CHARS),
      state: this.exitStatus ? 'exited' : 'running',
      startedAt: this.startedAt.toISOString(),
      stdout: { size: this.output.stdout.size, dropped: this.output.stdout.dropped },
      stderr: { size: this.output.stderr.size, dropped: this.output.stderr.dropped },
    };
    if (this.spec.cwd !== undefined) info.cwd = this.spec.cwd;
    if (this.exitStatus) {
      info.exitCode = this.exitStatus.exitCode;
      if (this.exitStatus.signal !== undefined) info.signal = this.exitStatus.signal;
      info.exitedAt = this.exitStatus.at.toISOString();
    }
    return info;
  }

  private wire(): void {
    const { child, spec } = this;
    for (const stream of ['stdout', 'stderr'] as const) {
      child[stream]?.on('data', (chunk: Buffer) => {
        this.output[stream].append(chunk);
        this.notify();
      });
      child[stream]?.on('error', (err) =>
        spec.logger.debug('process pipe error', { id: spec.id, error: errorMessage(err) }),
      );
    }
    child.on('error', (err) => spec.logger.warn('process error', { id: spec.id, error: errorMessage(err) }));
    child.once('exit', (code, signal) => {
      this.reapedAt = new Date();
      const timer = setTimeout(() => this.finish(code, signal), DRAIN_AFTER_EXIT_MS);
      child.once('close', () => {
        clearTimeout(timer);
        this.finish(code, signal);
      });
    });
  }

  private finish(code: number | null, signal: NodeJS.Signals | null): void {
    if (this.exitStatus) return;
    this.exitStatus = {
      exitCode: code ?? 128 + (signal ? (constants.signals[signal] ?? 0) : 0),
      at: new Date(),
      ...(signal ? { signal } : {}),
    };
    this.spec.logger.info('process exited', {
      id: this.spec.id,
      pid: this.pid,
      exitCode: this.exitStatus.exitCode,
      signal: signal ?? undefined,
    });
    this.notify();
    this.markExited();
  }

  private notify(): void {
    for (const listener of [...this.listeners]) listener();
  }
}
