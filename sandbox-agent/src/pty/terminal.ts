/**
 * One terminal: the static `sandbox-pty` helper (test-e2e/images/src/sandbox-pty.c) running an
 * interactive bash on a new pseudo-terminal, driven over pipes. Node has no PTY API without a
 * native module; the helper is the small native part (docs/adr/0018-agent-wire-contract-and-interactive-calls.md).
 *
 *   helper fd 0/1  terminal input / output (raw bytes)
 *   helper fd 3    "COLS ROWS\n" resize lines from the agent
 *   helper fd 4    "pid N\n" (the shell's session id) and "exit CODE SIGNAL\n" from the helper
 *
 * Closing the helper's stdin hangs the terminal up (SIGHUP, then SIGKILL after 2 s); once the
 * helper has exited, whatever the shell left in its session (background jobs) is killed too.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { constants } from 'node:os';
import type { Readable, Writable } from 'node:stream';

import type { ExitEvent } from '@sandbox-platform/api';

import type { Logger } from '../log.js';
import { errorMessage } from '../log.js';
import { killSession } from '../shell/processes.js';

/** How to start a terminal. */
export interface TerminalSpec {
  helperPath: string;
  /** argv of the program on the terminal (bash and its script). */
  argv: readonly string[];
  cols: number;
  rows: number;
  /** The program's start directory (the workspace). */
  cwd: string;
  env: NodeJS.ProcessEnv;
  logger: Logger;
}

/** Longest status line the helper writes ("exit 255 64\n"); more is a broken helper. */
const MAX_STATUS_BYTES = 256;

/** See the module comment. */
export class Terminal {
  private sessionId: number | undefined;
  private status = '';
  private exit: ExitEvent | undefined;
  private markEnded!: (exit: ExitEvent) => void;
  /** Resolves with the exit status once the helper has exited and its output is drained. */
  readonly ended: Promise<ExitEvent> = new Promise((resolve) => (this.markEnded = resolve));

  private constructor(
    private readonly child: ChildProcess,
    private readonly logger: Logger,
  ) {}

  /** Starts the helper; rejects when it cannot be spawned. */
  static start(spec: TerminalSpec): Promise<Terminal> {
    const child = spawn(spec.helperPath, [String(spec.cols), String(spec.rows), '--', ...spec.argv], {
      cwd: spec.cwd,
      env: spec.env,
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe', 'pipe', 'pipe'],
    });
    return new Promise((resolve, reject) => {
      child.once('error', reject);
      child.once('spawn', () => {
        child.off('error', reject);
        const terminal = new Terminal(child, spec.logger);
        terminal.wire();
        resolve(terminal);
      });
    });
  }

  /** Terminal output as it arrives. */
  get output(): Readable {
    return this.child.stdout as Readable;
  }

  /** Writes terminal input; false when the helper's buffer is full (wait for {@link onDrain}). */
  write(data: Buffer): boolean {
    const input = this.child.stdin as Writable;
    return input.writable ? input.write(data) : true;
  }

  /** Calls `listener` once the input buffer has room again. */
  onDrain(listener: () => void): void {
    this.child.stdin?.once('drain', listener);
  }

  /** Resizes the terminal (the shell gets SIGWINCH). */
  resize(cols: number, rows: number): void {
    const control = this.child.stdio[3] as Writable;
    if (control.writable) control.write(`${cols} ${rows}\n`);
  }

  /** Hangs the terminal up: the shell gets SIGHUP (SIGKILL 2 s later); {@link ended} follows. */
  hangUp(): void {
    this.child.stdin?.end();
  }

  /** Kills the helper at once (the shell gets the hangup from the kernel). */
  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  }

  private wire(): void {
    const { child, logger } = this;
    const status = child.stdio[4] as Readable;
    status.on('data', (chunk: Buffer) => this.onStatus(chunk));
    child.stderr?.on('data', (chunk: Buffer) => {
      logger.warn('terminal helper', {
        message: chunk.toString('utf8', 0, Math.min(chunk.length, 512)).trim(),
      });
    });
    for (const stream of [child.stdin, child.stdio[3], child.stdout, status]) {
      // EPIPE after the helper exited; the exit is reported through 'close'.
      stream?.on('error', (err) => logger.debug('terminal pipe error', { error: errorMessage(err) }));
    }
    child.once('close', (code, signal) => void this.onClose(code, signal));
  }

  private onStatus(chunk: Buffer): void {
    this.status += chunk.toString('latin1');
    if (this.status.length > MAX_STATUS_BYTES) {
      this.logger.warn('terminal helper status channel overflow');
      this.status = '';
      return;
    }
    let nl = this.status.indexOf('\n');
    while (nl >= 0) {
      const line = this.status.slice(0, nl);
      this.status = this.status.slice(nl + 1);
      const pid = /^pid (\d+)$/.exec(line);
      const exit = /^exit (\d+) (\d+)$/.exec(line);
      if (pid) this.sessionId = Number(pid[1]);
      if (exit) this.exit = exitEvent(Number(exit[1]), Number(exit[2]));
      nl = this.status.indexOf('\n');
    }
  }

  private async onClose(code: number | null, signal: NodeJS.Signals | null): Promise<void> {
    if (this.sessionId !== undefined) {
      await killSession(this.sessionId).catch((err: unknown) => {
        this.logger.warn('cannot clean up a terminal session', { error: errorMessage(err) });
      });
    }
    // The helper's own report wins; without one (it was killed), its own exit status.
    const fallback = exitEvent(code ?? 128 + (signal ? (constants.signals[signal] ?? 0) : 0), 0);
    if (signal) fallback.signal = signal;
    this.markEnded(this.exit ?? fallback);
  }
}

function exitEvent(exitCode: number, signalNumber: number): ExitEvent {
  const event: ExitEvent = { type: 'exit', exitCode: Math.min(Math.max(exitCode, 0), 255) };
  const name = Object.entries(constants.signals).find(([, n]) => n === signalNumber)?.[0];
  if (signalNumber > 0 && name) event.signal = name;
  return event;
}
