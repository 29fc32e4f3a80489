/**
 * One file watch (docs/adr/0033): the static helper `sandbox-watch` (inotify; its C source is
 * test-e2e/images/src/sandbox-watch.c) run on a directory of the workspace, its NUL-separated
 * records turned into the wire contract's lines (crds/src/wire/watch.ts). The helper runs as the
 * sandbox's user, so its output is parsed with bounds like any other output of the sandbox.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { posix } from 'node:path';

import type { WatchLine } from '@sandbox-platform/api';

/** Longest record field (a path) accepted from the helper; PATH_MAX is 4096. */
const MAX_FIELD_BYTES = 8192;

/** The helper could not start watching (missing binary, a failure it reported). */
export class WatchStartError extends Error {
  override readonly name = 'WatchStartError';
}

/** What a watcher reports. */
export interface WatcherEvents {
  /** A line for the client (a change, an overflow). */
  line(line: WatchLine): void;
  /** The watch is over (the directory went, the helper failed or exited); called once. */
  end(reason: string): void;
}

const KINDS: Record<string, 'create' | 'modify' | 'delete' | 'rename'> = {
  c: 'create',
  m: 'modify',
  d: 'delete',
  r: 'rename',
};

/** See the module comment. */
export class Watcher {
  private buffered: Buffer = Buffer.alloc(0);
  private ended = false;

  private constructor(
    private readonly child: ChildProcess,
    /** The watched directory relative to the workspace ("" for the workspace). */
    private readonly base: string,
    private readonly events: WatcherEvents,
  ) {}

  /**
   * Starts the helper on `absolute` (`relative` to the workspace) and resolves once every watch is
   * in place (its `w` record): changes from then on are reported.
   */
  static start(
    helperPath: string,
    dir: { absolute: string; relative: string },
    recursive: boolean,
    events: WatcherEvents,
  ): Promise<Watcher> {
    const args = recursive ? ['-r', dir.absolute] : [dir.absolute];
    const child = spawn(helperPath, args, { stdio: ['ignore', 'pipe', 'ignore'] });
    let ready!: () => void;
    let failed!: (err: Error) => void;
    const started = new Promise<void>((resolve, reject) => ((ready = resolve), (failed = reject)));
    const watcher = new Watcher(child, dir.relative, {
      line: (line) => events.line(line),
      end: (reason) => {
        failed(new WatchStartError(reason));
        events.end(reason);
      },
    });
    watcher.onReady = ready;
    child.once('error', (err) => watcher.finish(`watcher-unavailable: ${err.message}`));
    child.once('exit', () => watcher.finish('watcher-exited'));
    child.stdout?.on('data', (chunk: Buffer) => watcher.take(chunk));
    return started.then(() => watcher);
  }

  private onReady: () => void = () => undefined;

  /** Stops the helper (the client left, the agent stops); no end is reported. */
  stop(): void {
    this.ended = true;
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  }

  private finish(reason: string): void {
    if (this.ended) return;
    this.ended = true;
    this.stop();
    this.events.end(reason);
  }

  private take(chunk: Buffer): void {
    if (this.ended) return;
    this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
    for (;;) {
      const used = this.record(this.buffered);
      if (used === 0) break;
      this.buffered = this.buffered.subarray(used);
      if (this.ended) return;
    }
    if (this.buffered.length > 2 * MAX_FIELD_BYTES + 2) this.finish('watcher-protocol-error');
  }

  /** Handles one complete record at the start of `buf`; returns its length, 0 when incomplete. */
  private record(buf: Buffer): number {
    const first = buf.indexOf(0, 2);
    if (buf.length < 3 || first < 0) return 0;
    const kind = String.fromCharCode(buf[0] ?? 0);
    const directory = buf[1] === 0x64; // 'd'
    const path = buf.subarray(2, first).toString('utf8');
    let used = first + 1;
    let from: string | undefined;
    if (kind === 'r') {
      const second = buf.indexOf(0, used);
      if (second < 0) return 0;
      from = buf.subarray(used, second).toString('utf8');
      used = second + 1;
    }
    this.handle(kind, path, directory, from);
    return used;
  }

  private handle(kind: string, path: string, directory: boolean, from: string | undefined): void {
    const type = KINDS[kind];
    if (type) {
      const line: WatchLine = { type, path: this.relative(path), directory };
      if (from !== undefined) line.from = this.relative(from);
      this.events.line(line);
    } else if (kind === 'w') this.onReady();
    else if (kind === 'o') this.events.line({ type: 'overflow', dropped: 0 });
    else if (kind === 'g') this.finish('directory-gone');
    else if (kind === 'e') this.finish(path.slice(0, 128) || 'watcher-error');
    else this.finish('watcher-protocol-error');
  }

  private relative(path: string): string {
    return this.base === '' ? path : path === '' ? this.base : posix.join(this.base, path);
  }
}
