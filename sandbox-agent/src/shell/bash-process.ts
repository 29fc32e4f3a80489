/**
 * One bash child process and its three pipes: stdin (the frames), stdout and stderr. It only
 * moves bytes; framing and lifecycle live in Execution and PersistentShell.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readSync } from 'node:fs';

import type { Logger } from '../log.js';
import { errorMessage } from '../log.js';
import { killSession, sendSignal } from './processes.js';

/** The output streams of a command. */
export type OutputStream = 'stdout' | 'stderr';

/** Callbacks from a running bash. */
export interface BashEvents {
  output(stream: OutputStream, chunk: Buffer): void;
  /** bash exited and its pipes are drained (or a bounded wait passed). Called once. */
  exit(code: number | null, signal: NodeJS.Signals | null): void;
}

/** How to start bash. */
export interface BashOptions {
  bashPath: string;
  /**
   * Script bash runs at its start instead of reading its stdin as script (it arrives in the
   * variable {@link INIT_VARIABLE}, which the script itself should unset). The persistent shell's
   * init ends in a loop that reads stdin as frames: a bash that parsed its stdin as script keeps
   * buffer bookkeeping for fd 0 there, and 5.2 crashes (SIGSEGV) when a command then runs
   * `exec 3<&0` after fd 0 was redirected.
   */
  init: string;
  cwd: string;
  env: NodeJS.ProcessEnv;
  logger: Logger;
}

/** The variable that carries the init script into bash (see BashOptions.init). */
export const INIT_VARIABLE = '__sbx_init';

/**
 * Most bytes {@link BashProcess.drainStderr} takes at once: a pipe holds at most 1 MiB
 * (/proc/sys/fs/pipe-max-size), so this is all a finished command can have left there, while a
 * background job that keeps writing cannot hold the event loop.
 */
export const STDERR_DRAIN_MAX_BYTES = 2 * 1024 * 1024;

/**
 * One read buffer for every drain: nearly every drain finds nothing (EAGAIN), so a fresh 64 KiB
 * buffer per command would be garbage on the exec path; what is read is copied out.
 */
const drainScratch = Buffer.allocUnsafe(64 * 1024);

/** After bash exits, how long to wait for pipes that its leftovers might hold open. */
const DRAIN_AFTER_EXIT_MS = 500;

/** A running `bash --noprofile --norc`, in its own session (bash's pid is its pgid and sid). */
export class BashProcess {
  readonly spawnedAt = Date.now();
  private exited = false;
  private markGone!: () => void;
  /** Resolves after bash exited and the exit event was delivered. */
  readonly gone: Promise<void> = new Promise((resolve) => (this.markGone = resolve));

  private constructor(
    private readonly child: ChildProcess,
    readonly pid: number,
  ) {}

  /**
   * Starts bash; resolves once the process exists, rejects when it cannot be spawned. `events`
   * builds the callbacks for the new instance (they need to know which bash they belong to).
   */
  static start(opts: BashOptions, events: (bash: BashProcess) => BashEvents): Promise<BashProcess> {
    // `$0` stays the bash path, as when bash reads its script from stdin.
    const child = spawn(
      opts.bashPath,
      ['--noprofile', '--norc', '-c', `builtin eval "$${INIT_VARIABLE}"`, opts.bashPath],
      {
        cwd: opts.cwd,
        env: { ...opts.env, [INIT_VARIABLE]: opts.init },
        // detached makes bash a session and process group leader.
        stdio: ['pipe', 'pipe', 'pipe'],
        detached: true,
      },
    );
    return new Promise((resolve, reject) => {
      child.once('error', reject);
      child.once('spawn', () => {
        child.off('error', reject);
        const bash = new BashProcess(child, child.pid ?? -1);
        bash.wire(events(bash), opts.logger);
        resolve(bash);
      });
    });
  }

  /** True until bash has exited. */
  get alive(): boolean {
    return !this.exited;
  }

  /** Writes script text to bash's stdin. */
  write(script: string): void {
    this.child.stdin?.write(script);
  }

  /**
   * What is waiting in bash's stderr pipe now, read synchronously (the pipe is non-blocking: a
   * read that finds nothing ends it), at most STDERR_DRAIN_MAX_BYTES. Bytes the event loop has
   * not delivered yet come out here instead, in order; the stream then finds nothing to read.
   * Node has no public way to a child's pipe fd: `_handle.fd` is libuv's (Node 20). Should it go,
   * stderr written just before a command's end would be lost; the exec test "has all of a
   * command's stderr" fails then.
   */
  drainStderr(): Buffer {
    const fd = (this.child.stderr as unknown as { _handle?: { fd?: number } } | null)?._handle?.fd;
    if (fd === undefined || fd < 0) return Buffer.alloc(0);
    const parts: Buffer[] = [];
    let total = 0;
    while (total < STDERR_DRAIN_MAX_BYTES) {
      let n: number;
      try {
        n = readSync(
          fd,
          drainScratch,
          0,
          Math.min(drainScratch.length, STDERR_DRAIN_MAX_BYTES - total),
          null,
        );
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'EAGAIN') break;
        throw err;
      }
      if (n === 0) break;
      parts.push(Buffer.from(drainScratch.subarray(0, n)));
      total += n;
    }
    return parts.length === 1 ? parts[0]! : Buffer.concat(parts, total);
  }

  /** Signals bash's whole session: bash and everything still in it. */
  async killAll(): Promise<void> {
    if (this.exited) {
      await killSession(this.pid);
      return;
    }
    sendSignal(-this.pid, 'SIGKILL');
    await killSession(this.pid);
  }

  /** Sends a signal to bash's process group (bash and jobs left in its group). */
  signalGroup(signal: NodeJS.Signals): void {
    if (!this.exited) sendSignal(-this.pid, signal);
  }

  private wire(events: BashEvents, logger: Logger): void {
    const { child } = this;
    child.stdout?.on('data', (chunk: Buffer) => events.output('stdout', chunk));
    child.stderr?.on('data', (chunk: Buffer) => events.output('stderr', chunk));
    // Writing to a bash that just died fails with EPIPE; the exit handler reports the death.
    child.stdin?.on('error', (err) => logger.debug('shell stdin error', { error: errorMessage(err) }));
    child.on('error', (err) => logger.error('shell process error', { error: errorMessage(err) }));
    child.once('exit', (code, signal) => {
      this.exited = true;
      // Leftover background processes may hold the pipes open; kill them so the pipes drain.
      void killSession(this.pid)
        .catch((err: unknown) =>
          logger.warn('cannot clean up the dead shell session', { error: errorMessage(err) }),
        )
        .then(() => waitForClose(child, DRAIN_AFTER_EXIT_MS))
        .then(() => {
          events.exit(code, signal);
          this.markGone();
        });
    });
  }
}

function waitForClose(child: ChildProcess, maxMs: number): Promise<void> {
  return new Promise((resolve) => {
    if (child.stdout?.closed !== false && child.stderr?.closed !== false) {
      resolve();
      return;
    }
    const timer = setTimeout(resolve, maxMs);
    child.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
