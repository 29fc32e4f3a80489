/**
 * Reads dropped packets from the NFLOG helper (test-e2e/images/src/sandbox-nflog.c): spawns it,
 * splits its stdout into lines of at most `maxLineBytes` (a longer line is dropped whole, never
 * buffered), validates each line (drop.ts) and hands each drop on. The helper is restarted with
 * exponential backoff when it exits; when it keeps exiting at once (no CAP_NET_ADMIN, the group
 * taken by another listener) the reader gives up through `onFatal`, so the Pod restarts visibly
 * instead of retrying quietly forever. The lines come from our helper, but their contents from
 * packets a sandbox sent: everything is bounded and checked.
 */
import { spawn as nodeSpawn, type ChildProcess } from 'node:child_process';

import { checkDrop, type DroppedPacket } from './drop.js';

/** Longest stdout line kept, bytes (the helper's lines are about 110 bytes). */
export const MAX_LINE_BYTES = 512;

/** What the reader logs. */
export interface ReaderLog {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

/** Splits a byte stream into lines of at most `max` bytes; longer lines are counted and skipped. */
export class LineSplitter {
  private parts: Buffer[] = [];
  private size = 0;
  private overlong = false;
  /** Lines dropped for their length. */
  tooLong = 0;

  constructor(private readonly max: number) {}

  /** The complete lines in `chunk` (with what came before it), without their newline. */
  push(chunk: Buffer): string[] {
    const lines: string[] = [];
    let start = 0;
    for (let nl = chunk.indexOf(10, start); nl >= 0; nl = chunk.indexOf(10, start)) {
      this.append(chunk.subarray(start, nl));
      if (this.overlong) this.tooLong++;
      else lines.push(Buffer.concat(this.parts, this.size).toString('utf8'));
      this.parts = [];
      this.size = 0;
      this.overlong = false;
      start = nl + 1;
    }
    this.append(chunk.subarray(start));
    return lines;
  }

  private append(part: Buffer): void {
    if (this.overlong || part.length === 0) return;
    if (this.size + part.length > this.max) {
      this.overlong = true;
      this.parts = [];
      this.size = 0;
      return;
    }
    this.parts.push(Buffer.from(part));
    this.size += part.length;
  }
}

/** The drop in one helper line, or why it is refused. */
export function parseDropLine(line: string): DroppedPacket | string {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return 'not JSON';
  }
  return checkDrop(value);
}

export interface DropReaderOptions {
  /** The helper and its arguments (e.g. /usr/local/bin/sandbox-nflog 100). */
  command: string;
  args: readonly string[];
  onDrop: (drop: DroppedPacket) => void;
  /** Called once when the helper keeps failing at start; the reader has stopped then. */
  onFatal: (reason: string) => void;
  log: ReaderLog;
  /** Spawns the helper (tests pass a fake; default node:child_process). */
  spawn?: (command: string, args: readonly string[]) => ChildProcess;
  maxLineBytes?: number;
  /** First restart delay and the most it doubles to, ms (default 500 and 30,000). */
  backoffMs?: { initial: number; max: number };
  /** A run shorter than this counts as a failed start, ms (default 5,000). */
  quickExitMs?: number;
  /** Failed starts in a row before onFatal (default 5). */
  maxQuickExits?: number;
}

/** Counters since the reader started. */
export interface ReaderStats {
  drops: number;
  invalid: number;
  tooLong: number;
  restarts: number;
}

/** Keeps one helper running and turns its lines into drops. */
export class DropReader {
  readonly stats: ReaderStats = { drops: 0, invalid: 0, tooLong: 0, restarts: 0 };
  private child: ChildProcess | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private quickExits = 0;
  private delay: number;

  constructor(private readonly opts: DropReaderOptions) {
    this.delay = opts.backoffMs?.initial ?? 500;
  }

  start(): void {
    this.stopped = false;
    this.run();
  }

  /** Stops the helper (SIGTERM) and waits for it to end. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
    child.kill('SIGTERM');
    await closed;
  }

  private run(): void {
    const o = this.opts;
    const max = o.maxLineBytes ?? MAX_LINE_BYTES;
    const out = new LineSplitter(max);
    const err = new LineSplitter(max);
    const started = Date.now();
    const child = (o.spawn ?? ((c, a) => nodeSpawn(c, a, { stdio: ['ignore', 'pipe', 'pipe'] })))(
      o.command,
      o.args,
    );
    this.child = child;
    let ended = false;
    const end = (why: Record<string, unknown>): void => {
      if (ended) return;
      ended = true;
      this.exited(Date.now() - started, why);
    };
    child.stdout?.on('data', (chunk: Buffer) => {
      for (const line of out.push(chunk)) this.line(line);
      this.stats.tooLong += out.tooLong;
      out.tooLong = 0;
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      for (const line of err.push(chunk)) o.log.warn('nflog helper', { stderr: line });
    });
    child.on('error', (e: Error) => end({ err: String(e) }));
    child.on('close', (code: number | null, signal: NodeJS.Signals | null) => end({ code, signal }));
  }

  private line(line: string): void {
    const drop = parseDropLine(line);
    if (typeof drop === 'string') {
      this.stats.invalid++;
      this.opts.log.warn('nflog helper line refused', { reason: drop, line: line.slice(0, 120) });
      return;
    }
    this.stats.drops++;
    this.opts.onDrop(drop);
  }

  private exited(ranMs: number, why: Record<string, unknown>): void {
    this.child = undefined;
    if (this.stopped) return;
    const o = this.opts;
    const quick = ranMs < (o.quickExitMs ?? 5000);
    this.quickExits = quick ? this.quickExits + 1 : 0;
    if (!quick) this.delay = o.backoffMs?.initial ?? 500;
    if (this.quickExits >= (o.maxQuickExits ?? 5)) {
      this.stopped = true;
      o.onFatal(
        `the nflog helper failed ${this.quickExits} times in a row at start (last: ${JSON.stringify(why)})`,
      );
      return;
    }
    o.log.error('nflog helper exited; restarting', { ...why, ranMs, inMs: this.delay });
    this.stats.restarts++;
    this.timer = setTimeout(() => this.run(), this.delay);
    this.delay = Math.min(this.delay * 2, o.backoffMs?.max ?? 30_000);
  }
}
