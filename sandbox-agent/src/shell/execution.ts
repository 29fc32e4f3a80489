/**
 * One command running in the persistent bash: writes its wrapper, splits the shell's output at
 * the sentinel, applies the output cap, and completes when the sentinel was seen on stdout and
 * on stderr with the exit status after it (status-trailer.ts), or when bash died.
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
  private readonly sentinel: string;
  private readonly scanners: Record<OutputStream, SentinelScanner>;
  private readonly caps: Record<OutputStream, CappedStream>;
  /** The exit status after the sentinel on stderr. */
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
    this.sentinel = halves.head + halves.tail;
    this.script = buildWrapper(command, halves);
    const marker = Buffer.from(this.sentinel);
    this.scanners = { stdout: new SentinelScanner(marker), stderr: new SentinelScanner(marker) };
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
   * sentinel and, on stderr, the exit status: output of background jobs), which the caller drops.
   * Throws a FramingError when the sentinel on stderr is not followed by an exit status.
   */
  onOutput(stream: OutputStream, chunk: Buffer): number {
    const scanned = this.scanners[stream].push(chunk);
    this.emit(stream, scanned.data);
    const after = stream === 'stderr' && scanned.found ? this.trailer.push(scanned.after) : scanned.after;
    this.settleIfComplete();
    return after.length;
  }

  /** bash died before the command completed: whatever output was held back is output after all. */
  onShellExit(code: number | null, signal: NodeJS.Signals | null): void {
    if (this.settled) return;
    for (const stream of ['stdout', 'stderr'] as const) this.emit(stream, this.scanners[stream].flush());
    this.settle(code ?? 128 + (signal ? (constants.signals[signal] ?? 0) : 0), true);
  }

  private emit(stream: OutputStream, data: Buffer): void {
    if (data.length === 0) return;
    const kept = this.caps[stream].take(data);
    if (kept.length > 0) this.observer.onOutput(stream, kept);
  }

  private settleIfComplete(): void {
    const status = this.trailer.status;
    if (status !== undefined && this.scanners.stdout.found) this.settle(status, false);
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
