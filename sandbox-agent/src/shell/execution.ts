/**
 * One command running in the persistent bash: writes its wrapper, splits stdout at the sentinel,
 * applies the output cap, and completes when the sentinel with the exit status after it
 * (status-trailer.ts) was seen on stdout, or when bash died. stderr carries no marker: bash writes
 * the sentinel only after the command's foreground processes have ended, so by then everything
 * they wrote to stderr is in the stderr pipe, and the owner hands it over synchronously (see
 * BashProcess.drainStderr) before the command completes. One write per command instead of two,
 * and one wake-up of the agent (each is costly under gVisor).
 */
import { constants } from 'node:os';
import { performance } from 'node:perf_hooks';

import type { OutputStream } from './bash-process.js';
import { CappedStream } from './capped-stream.js';
import { lastPid } from './processes.js';
import { RandomPool, SENTINEL_POOL_BYTES } from './random-pool.js';
import { SentinelScanner } from './sentinel-scanner.js';
import { StatusTrailer } from './status-trailer.js';
import { buildWrapper, type SentinelHalves, type ShellCommand } from './wrapper.js';

/** Exit status reported for a command that hit its deadline, as GNU `timeout` does. */
export const TIMEOUT_EXIT_CODE = 124;

/** Exit status reported for a command the agent stopped for bad stdin: killed (128 + SIGKILL). */
export const STOPPED_EXIT_CODE = 137;

/** Receives a command's output as it arrives, already capped. */
export interface OutputObserver {
  /** The command started running (left the queue). */
  onStart?(): void;
  onOutput(stream: OutputStream, chunk: Buffer): void;
}

/** How a command ended. */
export interface ExecOutcome {
  exitCode: number;
  durationMs: number;
  truncated: boolean;
  /** Which streams lost bytes to the cap. */
  truncatedStreams: Record<OutputStream, boolean>;
  timedOut: boolean;
  /** True when bash died during the command. */
  shellDied: boolean;
}

/** Random bytes of a sentinel: 8 for each half. */
const SENTINEL_RANDOM_BYTES = 16;

/** Where every command's sentinel comes from (see random-pool.ts). */
const sentinelRandom = new RandomPool(SENTINEL_POOL_BYTES);

/** One framed command; create it, write `script` to bash, then route bash's events to it. */
export class Execution {
  readonly script: string;
  readonly startedAt = performance.now();
  /** The last PID allocated when the command was created (see processes.ts): tells its processes from earlier jobs. */
  readonly startPid = lastPid();
  private readonly scanner: SentinelScanner;
  private readonly caps: Record<OutputStream, CappedStream>;
  /** The exit status after the sentinel on stdout. */
  private readonly trailer = new StatusTrailer();
  private expired = false;
  private stopped = false;
  private settled = false;
  private resolveDone!: (outcome: ExecOutcome) => void;
  /** Resolves once when the command has ended. */
  readonly done: Promise<ExecOutcome>;

  constructor(
    command: ShellCommand,
    outputCapBytes: number,
    private readonly observer: OutputObserver,
  ) {
    const random = sentinelRandom.hex(SENTINEL_RANDOM_BYTES);
    const half = random.length / 2;
    const halves: SentinelHalves = {
      head: `__sbx_${random.slice(0, half)}`,
      tail: `${random.slice(half)}__`,
    };
    this.script = buildWrapper(command, halves);
    const marker = Buffer.from(halves.head + halves.tail);
    this.scanner = new SentinelScanner(marker);
    this.caps = { stdout: new CappedStream(outputCapBytes), stderr: new CappedStream(outputCapBytes) };
    this.done = new Promise((resolve) => (this.resolveDone = resolve));
  }

  /** True once the command has ended. */
  get finished(): boolean {
    return this.settled;
  }

  /** Milliseconds since the command started. */
  get elapsedMs(): number {
    return performance.now() - this.startedAt;
  }

  /** Marks the command as timed out: its exit code becomes 124 whatever bash reports. */
  markTimedOut(): void {
    this.expired = true;
  }

  /** Marks the command as stopped by the agent: its exit code becomes 137 (unless it timed out). */
  markStopped(): void {
    this.stopped = true;
  }

  /**
   * Feeds shell output; returns the number of bytes that belonged to no command (after the
   * sentinel and its exit status on stdout, and stderr after that: output of background jobs),
   * which the caller drops. `drainStderr` gives what is waiting in bash's stderr pipe (called
   * once, when the sentinel completes the command). Throws a FramingError when the sentinel on
   * stdout is not followed by an exit status.
   */
  onOutput(stream: OutputStream, chunk: Buffer, drainStderr: () => Buffer): number {
    if (this.settled) return chunk.length;
    if (stream === 'stderr') {
      this.emit('stderr', chunk);
      return 0;
    }
    const scanned = this.scanner.push(chunk);
    this.emit('stdout', scanned.data);
    if (!scanned.found) return 0;
    const after = this.trailer.push(scanned.after);
    const status = this.trailer.status;
    if (status !== undefined) {
      this.emit('stderr', drainStderr());
      this.settle(status, false);
    }
    return after.length;
  }

  /** bash died before the command completed: whatever output was held back is output after all. */
  onShellExit(code: number | null, signal: NodeJS.Signals | null): void {
    if (this.settled) return;
    this.emit('stdout', this.scanner.flush());
    this.settle(code ?? 128 + (signal ? (constants.signals[signal] ?? 0) : 0), true);
  }

  private emit(stream: OutputStream, data: Buffer): void {
    if (data.length === 0) return;
    const kept = this.caps[stream].take(data);
    if (kept.length > 0) this.observer.onOutput(stream, kept);
  }

  private settle(status: number, shellDied: boolean): void {
    if (this.settled) return;
    this.settled = true;
    this.resolveDone({
      exitCode: this.expired ? TIMEOUT_EXIT_CODE : this.stopped ? STOPPED_EXIT_CODE : status,
      durationMs: Math.round(this.elapsedMs),
      truncated: this.caps.stdout.truncated || this.caps.stderr.truncated,
      truncatedStreams: { stdout: this.caps.stdout.truncated, stderr: this.caps.stderr.truncated },
      timedOut: this.expired,
      shellDied,
    });
  }
}
