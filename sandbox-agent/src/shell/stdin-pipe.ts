/**
 * A command's stdin as a named pipe (FIFO) in the agent's private directory. bash's own stdin is
 * the protocol (its frames, see wrapper.ts), so a command can never share it; a FIFO per
 * command gives the command a real pipe that the agent fills while it runs, closes at EOF, and
 * destroys when the command ends, without touching bash's own descriptors.
 *
 * - The directory is made by mkdtemp (mode 0700) under the OS temp directory (TMPDIR, the Pod's
 *   /tmp emptyDir); each FIFO has a random name and mode 0600, and is unlinked when its command
 *   ends. Commands run as the same user and could reach it anyway: the privacy is against mixing
 *   up commands, not a boundary.
 * - The agent opens the FIFO O_RDWR|O_NONBLOCK: that never blocks (an O_WRONLY open would wait in
 *   a libuv thread until bash opened its end), and bash's `<fifo` open then finds a writer at
 *   once. The descriptor is driven by the event loop (a libuv pipe handle), so a command that
 *   does not read makes writes wait for 'drain' rather than block a thread; that wait holds the
 *   producer (the request body) and so the client.
 * - EOF needs care: a reader sees EOF once every writer is closed, but a FIFO opened for reading
 *   while no writer exists blocks in open(2). Closing the agent's end before bash has opened its
 *   end would leave bash blocked for good, so {@link StdinPipe.end} first waits (polling with a
 *   short backoff) until bash holds the FIFO as its stdin: the wrapper's `<fifo` applies to
 *   `command eval`, a builtin, so bash itself opens it as its fd 0 for the command's duration,
 *   seen as /proc/<bash>/fd/0 with the FIFO's inode. A command that never gets there (its `cd`
 *   failed) needs no EOF; its end closes the pipe.
 * - Node has no mkfifo(3); the coreutils `mkfifo` program makes it (only for calls with stdin).
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { close, constants, fstat, open } from 'node:fs';
import { mkdtemp, rm, stat, unlink } from 'node:fs/promises';
import { Socket } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';

import { StdinClosedError, type StdinWrite } from '../exec/stdin.js';

const execFileAsync = promisify(execFile);
const openAsync = promisify(open);
const fstatAsync = promisify(fstat);
const closeAsync = promisify(close);

/** Bound of one mkfifo run (it is a single syscall; this only guards against a wedged host). */
const MKFIFO_TIMEOUT_MS = 5000;

/** Backoff of the wait for bash to open the FIFO: first and longest pause. */
const OPEN_POLL_FIRST_MS = 1;
const OPEN_POLL_MAX_MS = 50;

/** Makes the stdin pipes of commands in one private directory. */
export class StdinPipes {
  private constructor(
    /** The private directory. */
    readonly dir: string,
    private readonly env: NodeJS.ProcessEnv,
  ) {}

  /**
   * Creates the private directory under `parent` and proves a pipe can be made there and seen as
   * a process's descriptor (fails the agent's start when `mkfifo` is missing, the directory is not
   * writable, or /proc does not show descriptors).
   */
  static async open(parent: string, env: NodeJS.ProcessEnv): Promise<StdinPipes> {
    const pipes = new StdinPipes(await mkdtemp(join(parent, 'sandbox-agent-')), env);
    try {
      const probe = await pipes.create(process.pid);
      const seen = await probe.isOpenAs(`/proc/self/fd/${probe.fd}`);
      await probe.close();
      if (!seen) throw new Error('/proc/self/fd does not show the pipe');
    } catch (err) {
      await pipes.close();
      throw new Error(`cannot make a stdin pipe in ${pipes.dir}`, { cause: err });
    }
    return pipes;
  }

  /** A new pipe, open for writing, for a command that `readerPid` (bash) opens as its stdin. */
  async create(readerPid: number): Promise<StdinPipe> {
    const path = join(this.dir, `stdin-${randomBytes(8).toString('hex')}`);
    await execFileAsync('mkfifo', ['-m', '600', '--', path], { env: this.env, timeout: MKFIFO_TIMEOUT_MS });
    const fd = await openAsync(path, constants.O_RDWR | constants.O_NONBLOCK | constants.O_NOFOLLOW);
    const stat = await fstatAsync(fd).catch(async (err: unknown) => {
      await closeAsync(fd);
      throw err;
    });
    const socket = new Socket({ fd, readable: false, writable: true });
    if (!stat.isFIFO()) {
      socket.destroy();
      throw new Error('the stdin pipe is not a FIFO');
    }
    return new StdinPipe(path, socket, { fd, ino: stat.ino, dev: stat.dev, readerPid });
  }

  /** Removes the directory and whatever is left in it. */
  async close(): Promise<void> {
    await rm(this.dir, { recursive: true, force: true });
  }
}

/** Identity of a pipe: the agent's descriptor, the FIFO's inode, and the process that reads it. */
interface PipeIdentity {
  fd: number;
  ino: number;
  dev: number;
  readerPid: number;
}

/** One command's stdin pipe. */
export class StdinPipe {
  private closed = false;
  private ending = false;
  private readonly wakers = new Set<() => void>();

  constructor(
    /** Path of the FIFO, for the command's `<path` redirection. */
    readonly path: string,
    private readonly socket: Socket,
    private readonly id: PipeIdentity,
  ) {
    // Writes cannot fail with EPIPE (the agent's own descriptor is a reader too); anything else
    // ends the feed, and the command sees EOF.
    socket.on('error', () => this.destroy());
    socket.once('close', () => this.destroy());
  }

  /** Writes a chunk; resolves when the pipe took it (or has room again). */
  readonly write: StdinWrite = (chunk) => {
    if (this.closed) return Promise.reject(new StdinClosedError('the command has ended'));
    if (this.socket.write(chunk)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const wake = (): void => {
        this.wakers.delete(wake);
        this.socket.off('drain', wake);
        if (this.closed) reject(new StdinClosedError('the command has ended'));
        else resolve();
      };
      this.wakers.add(wake);
      this.socket.once('drain', wake);
    });
  };

  /** The agent's descriptor of the FIFO. */
  get fd(): number {
    return this.id.fd;
  }

  /**
   * EOF for the command: once bash has opened the FIFO (see the module comment), what was written
   * is still delivered, then the write end is closed.
   */
  end(): void {
    if (this.closed || this.ending) return;
    this.ending = true;
    void this.whenOpened().then(() => {
      if (!this.closed) this.socket.end();
    });
  }

  /** True when `fdPath` (a /proc/<pid>/fd/<n> link) is this FIFO. */
  async isOpenAs(fdPath: string): Promise<boolean> {
    try {
      const target = await stat(fdPath);
      return target.ino === this.id.ino && target.dev === this.id.dev;
    } catch {
      return false; // not open (yet), or the process is gone: the caller polls or gives up
    }
  }

  /** Resolves once the reader has the FIFO as its stdin, or the pipe was closed. */
  private async whenOpened(): Promise<void> {
    const fdPath = `/proc/${this.id.readerPid}/fd/0`;
    for (let pause = OPEN_POLL_FIRST_MS; !this.closed; pause = Math.min(pause * 2, OPEN_POLL_MAX_MS)) {
      if (await this.isOpenAs(fdPath)) return;
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }

  /** The command ended: drop what was not read, close, unlink. */
  async close(): Promise<void> {
    this.destroy();
    await unlink(this.path).catch((err: unknown) => {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    });
  }

  private destroy(): void {
    if (this.closed) return;
    this.closed = true;
    this.socket.destroy();
    for (const wake of [...this.wakers]) wake();
  }
}
