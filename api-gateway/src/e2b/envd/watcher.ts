/**
 * Directory watchers (watch-scripts.ts says how they scan): the streaming WatchDir, whose watcher
 * lives as long as its stream, and the polled watchers of CreateWatcher / GetWatcherEvents /
 * RemoveWatcher (the Python sync SDK), whose ID names the agent process and the FIFO directory
 * holding the events file, so any gateway replica can serve the next poll.
 */
import type { Readable } from 'node:stream';

import type { ProcessInfo as AgentProcess } from '@sandbox-platform/api';
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { HandlerContext } from '@connectrpc/connect';
import type { FastifyBaseLogger } from 'fastify';

import { ProblemError, isProblemError } from '../../errors.js';
import type { CallOptions } from '../../exec/types.js';
import type { ExecService } from '../../service/exec-service.js';
import type { ProcessService, SessionRef } from '../../service/process-service.js';
import type {
  CreateWatcherRequest,
  FilesystemEventSchema,
  WatchDirRequest,
  WatchDirResponseSchema,
} from '../gen/filesystem/filesystem_pb.js';
import { cleanupScript, newIoToken } from './launcher.js';
import { workspacePath } from './paths.js';
import {
  followLines,
  outputBytes,
  outputData,
  TICK,
  withKeepalive,
  type FollowLine,
} from './process-events.js';
import { keepaliveMs } from './process-service.js';
import { runScript, stdoutBytes } from './sandbox-calls.js';
import { drainScript, eventsFile, parseRecords, watcherScript, type WatchRecord } from './watch-scripts.js';

type WatchResponse = MessageInitShape<typeof WatchDirResponseSchema>;
type FsEvent = MessageInitShape<typeof FilesystemEventSchema>;

const WATCHER_ID = /^([0-9a-f]{12})\.([0-9a-f]{32})$/;
/** How long a new watcher may take for its first scan. */
const READY_TIMEOUT_MS = 30_000;
/** Length of one follow of a streaming watcher (followed again while the stream lasts). */
const FOLLOW_MS = 240_000;

/** What the watchers need. */
export interface WatcherDeps {
  processes: ProcessService;
  execs: ExecService;
  log: FastifyBaseLogger;
  /** The workspace's path in the sandbox (paths.ts). */
  workspace: string;
}

function checkRequest(req: { includeEntry: boolean }): void {
  if (req.includeEntry) {
    throw new ProblemError('not-supported', 'watch events with entry info are not supported by this sandbox');
  }
}

function toEvent(r: Extract<WatchRecord, { kind: 'event' }>): FsEvent {
  return { name: r.name, type: r.type };
}

/** The records of a follow of a watcher's output (stdout), across chunk boundaries. */
async function* records(
  lines: AsyncIterable<FollowLine>,
): AsyncGenerator<WatchRecord | { kind: 'exit'; exitCode: number }> {
  let rest: Buffer = Buffer.alloc(0);
  for await (const line of lines) {
    if (line.type === 'exit') {
      yield { kind: 'exit', exitCode: line.exitCode };
      return;
    }
    if (line.type !== 'stdout') continue;
    const parsed = parseRecords(Buffer.concat([rest, outputData(line)]));
    rest = parsed.rest;
    yield* parsed.records;
  }
}

/**
 * One follow of a streaming watcher as WatchDir answers; true when the watcher ended (its
 * directory is gone), false when the follow reached its deadline. `at.offset` advances.
 */
async function* watchEvents(
  follow: Readable,
  at: { offset: number },
  tickMs: number,
  dir: string,
): AsyncGenerator<WatchResponse, boolean> {
  try {
    const items = records(countOffset(followLines(follow), (n) => (at.offset = n)));
    for await (const item of withKeepalive(items, tickMs)) {
      if (item === TICK) yield { event: { case: 'keepalive', value: {} } };
      else if (item.kind === 'ready') yield { event: { case: 'start', value: {} } };
      else if (item.kind === 'event') yield { event: { case: 'filesystem', value: toEvent(item) } };
      else {
        notFoundUnlessOk(item.exitCode, dir);
        return true;
      }
    }
    return false;
  } finally {
    follow.destroy();
  }
}

/** Streaming and polled directory watchers. */
export class EnvdWatchers {
  constructor(private readonly d: WatcherDeps) {}

  /** WatchDir: a start event once the first scan is done, then the events, until the client leaves. */
  async *stream(ref: SessionRef, req: WatchDirRequest, ctx: HandlerContext): AsyncGenerator<WatchResponse> {
    checkRequest(req);
    const dir = workspacePath(req.path, this.d.workspace).absolute;
    const opts: CallOptions = { signal: ctx.signal };
    const proc = await this.d.processes.start(
      ref,
      { command: watcherScript(dir, req.recursive, undefined) },
      opts,
    );
    try {
      const at = { offset: 0 };
      for (;;) {
        const follow = await this.d.processes.follow(
          ref,
          proc.id,
          { stdoutOffset: at.offset, stderrOffset: 0, deadlineAt: Date.now() + FOLLOW_MS },
          opts,
        );
        const ended = yield* watchEvents(follow, at, keepaliveMs(ctx), dir);
        if (ended || ctx.signal.aborted) return;
      }
    } finally {
      void this.stop(ref, proc, undefined);
    }
  }

  /** CreateWatcher: starts a polled watcher and answers once its first scan is done. */
  async create(
    ref: SessionRef,
    req: CreateWatcherRequest,
    opts: CallOptions,
  ): Promise<{ watcherId: string }> {
    checkRequest(req);
    const dir = workspacePath(req.path, this.d.workspace).absolute;
    const io = newIoToken();
    const proc = await this.d.processes.start(ref, { command: watcherScript(dir, req.recursive, io) }, opts);
    try {
      await this.ready(ref, proc, dir, opts);
    } catch (err) {
      void this.stop(ref, proc, io);
      throw err;
    }
    return { watcherId: `${proc.id}.${io}` };
  }

  /** GetWatcherEvents: the events since the last poll. */
  async events(ref: SessionRef, watcherId: string, opts: CallOptions): Promise<{ events: FsEvent[] }> {
    const { io } = parseWatcherId(watcherId);
    const r = await runScript(this.d.execs, ref, { script: drainScript(), args: [eventsFile(io)] }, opts);
    if (r.exitCode !== 0) throw new ProblemError('not-found', `watcher ${watcherId} has no events file`);
    const events = parseRecords(stdoutBytes(r)).records.flatMap((x) =>
      x.kind === 'event' ? [toEvent(x)] : [],
    );
    return { events };
  }

  /** RemoveWatcher: stops the watcher and removes its files. */
  async remove(ref: SessionRef, watcherId: string, opts: CallOptions): Promise<object> {
    const { id, io } = parseWatcherId(watcherId);
    const proc = await this.d.processes.describe(ref, id, opts);
    await this.stop(ref, proc, io);
    return {};
  }

  private async ready(ref: SessionRef, proc: AgentProcess, dir: string, opts: CallOptions): Promise<void> {
    const follow = await this.d.processes.follow(
      ref,
      proc.id,
      { deadlineAt: Date.now() + READY_TIMEOUT_MS },
      opts,
    );
    try {
      for await (const r of records(followLines(follow))) {
        if (r.kind === 'ready') return;
        if (r.kind === 'exit') return notFoundUnlessOk(r.exitCode, dir);
      }
      throw new ProblemError('upstream-timeout', `the watcher of ${dir} did not finish its first scan`);
    } finally {
      follow.destroy();
    }
  }

  /** Kills a watcher and removes it (and its directory); failures are logged, never thrown. */
  private async stop(ref: SessionRef, proc: AgentProcess, io: string | undefined): Promise<void> {
    try {
      await this.d.processes.signal(ref, proc.id, 'SIGKILL').catch(ignoreExited);
      await this.d.processes.wait(ref, proc.id, 5);
      await this.d.processes.remove(ref, proc.id);
      if (io) await runScript(this.d.execs, ref, { script: cleanupScript(io), timeoutSeconds: 10 }, {});
    } catch (err) {
      this.d.log.debug(
        { namespace: ref.namespace, session: ref.name, process: proc.id, err: (err as Error).message },
        'e2b: could not remove a watcher',
      );
    }
  }
}

function ignoreExited(err: unknown): void {
  if (isProblemError(err) && err.slug === 'process-exited') return;
  throw err;
}

function notFoundUnlessOk(exitCode: number, dir: string): void {
  if (exitCode === 44) throw new ProblemError('not-found', `directory ${JSON.stringify(dir)} does not exist`);
}

/** The agent process id and io token of a watcher ID; 404 for anything else. */
export function parseWatcherId(watcherId: string): { id: string; io: string } {
  const m = WATCHER_ID.exec(watcherId);
  if (!m) throw new ProblemError('not-found', `no watcher ${JSON.stringify(watcherId.slice(0, 64))}`);
  return { id: m[1]!, io: m[2]! };
}

/** Passes lines through, reporting the stdout offset after each stdout line. */
async function* countOffset(
  lines: AsyncIterable<FollowLine>,
  report: (offset: number) => void,
): AsyncGenerator<FollowLine> {
  for await (const line of lines) {
    if (line.type === 'stdout') {
      report(line.offset + outputBytes(line));
    }
    yield line;
  }
}
