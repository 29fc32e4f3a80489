/**
 * One background process: a `bash -c` started by the agent (not by the persistent shell) in its
 * own session and process group, its stdout and stderr read into rings, its exit recorded. It
 * outlives the call that started it and every later call, until it is removed or the agent stops.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
import { constants } from 'node:os';
import type { Writable } from 'node:stream';

import type { ProcessInfo } from '@sandbox-platform/api';

import type { Logger } from '../log.js';
import { errorMessage } from '../log.js';
import { sendSignal } from '../shell/processes.js';
import { shellQuote } from '../shell/wrapper.js';
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

/** bash's arguments, before its script. */
const BASH_ARGS = ['--noprofile', '--norc', '-c'];

/**
 * A bash started ahead of a process start (ProcessTable keeps one): a start then hands it its
 * script instead of paying the fork and exec of a bash, the costliest part of the start of a short
 * command under gVisor. Started as a process's bash is (its own session, the workspace, the
 * table's environment of the moment, stdin from /dev/null); `key` names that environment, so a
 * spare whose environment changed since (a warm Pod's bind) is not used.
 *
 * It waits for a line on fd 3 (a socket: bash cannot source it, and `read` reads one byte per
 * call), then sources `file`, where the start wrote the script (one read), as `bash -c` runs it.
 */
export class SpareBash {
  private constructor(
    readonly child: ChildProcess,
    readonly key: string,
    readonly file: string,
  ) {}

  /** Starts one; undefined when bash cannot be started (the next start then spawns its own). */
  static start(
    spec: Pick<SpawnSpec, 'bashPath' | 'workspace' | 'env' | 'logger'>,
    key: string,
    file: string,
  ): Promise<SpareBash | undefined> {
    const boot = `builtin read -r -u 3 __sbx_go || builtin exit 125; exec 3<&-; . ${shellQuote(file)}`;
    const child = spawn(spec.bashPath, [...BASH_ARGS, boot], {
      cwd: spec.workspace,
      env: spec.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
    });
    child.on('error', (err) => spec.logger.debug('spare bash error', { error: errorMessage(err) }));
    return new Promise((resolve) => {
      child.once('error', () => resolve(undefined));
      child.once('spawn', () => resolve(new SpareBash(child, key, file)));
    });
  }

  /** True while it waits for a script (it has not exited). */
  get usable(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null && this.child.pid !== undefined;
  }

  /** Ends an unused spare (its group: it started nothing). */
  stop(): void {
    if (this.usable) sendSignal(-this.child.pid!, 'SIGKILL');
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

  /**
   * Starts bash, or hands the script to `spare` when it is usable and was started with this
   * environment (the caller checks the key); rejects with {@link SpawnError} when bash cannot be
   * started.
   */
  static start(spec: SpawnSpec, spare?: SpareBash): Promise<ManagedProcess> {
    // A script with NUL is refused by spawn (as before); a spare would run it cut.
    if (spare?.usable && !spec.script.includes('\0'))
      return Promise.resolve(ManagedProcess.adopt(spec, spare));
    spare?.stop();
    const child = spawn(spec.bashPath, [...BASH_ARGS, spec.script], {
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
   * Gives a spare its script. Wired in the same tick as the caller's usable check, so its exit, if
   * it comes, is still to be emitted and reaches wire()'s listener; the script file goes with the
   * process's exit (or the table's close).
   */
  private static async adopt(spec: SpawnSpec, spare: SpareBash): Promise<ManagedProcess> {
    const { child } = spare;
    const proc = new ManagedProcess(spec, child, child.pid!);
    proc.wire();
    void proc.exited.then(() => rm(spare.file, { force: true }).catch(() => undefined));
    const go = child.stdio[3] as Writable;
    go.on('error', (err) => spec.logger.debug('spare pipe error', { id: spec.id, error: errorMessage(err) }));
    try {
      await writeFile(spare.file, `builtin unset -v __sbx_go\n${spec.script}`, { mode: 0o600 });
    } catch (err) {
      spare.stop();
      throw new SpawnError(`cannot hand a spare bash its script: ${errorMessage(err)}`, { cause: err });
    }
    go.end('\n');
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
