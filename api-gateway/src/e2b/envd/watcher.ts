/**
 * Directory watchers. The streaming WatchDir is the agent's inotify watch (the gateway's file
 * watching service, ADR 0033: exact events in the kernel's order, renames, overflow counts), its
 * lines mapped to envd's events; a rename within the tree is E2B's RENAME of the old name and
 * CREATE of the new one, as envd reports it. The polled watchers of CreateWatcher /
 * GetWatcherEvents / RemoveWatcher (the Python sync SDK) must outlive any one connection and be
 * served by any replica, so they are a scanning process in the sandbox (watch-scripts.ts) whose ID
 * names the agent process and the FIFO directory holding its events file.
 */
import type { ProcessInfo as AgentProcess, WatchLine } from '@sandbox-platform/api';
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { HandlerContext } from '@connectrpc/connect';
import type { FastifyBaseLogger } from 'fastify';

import { ProblemError, isProblemError } from '../../errors.js';
import type { CallOptions } from '../../exec/types.js';
import type { ExecService } from '../../service/exec-service.js';
import type { ProcessService, SessionRef } from '../../service/process-service.js';
import type { WatchService } from '../../service/watch-service.js';
import {
  EventType,
  type CreateWatcherRequest,
  type FilesystemEventSchema,
  type WatchDirRequest,
  type WatchDirResponseSchema,
} from '../gen/filesystem/filesystem_pb.js';
import { cleanupScript, newIoToken } from './launcher.js';
import { workspacePath } from './paths.js';
import { followLines, outputData, TICK, withKeepalive, type FollowLine } from './process-events.js';
import { keepaliveMs } from './process-service.js';
import { runScript, stdoutBytes } from './sandbox-calls.js';
import { drainScript, eventsFile, parseRecords, watcherScript, type WatchRecord } from './watch-scripts.js';

type WatchResponse = MessageInitShape<typeof WatchDirResponseSchema>;
type FsEvent = MessageInitShape<typeof FilesystemEventSchema>;

const WATCHER_ID = /^([0-9a-f]{12})\.([0-9a-f]{32})$/;
/** How long a new watcher may take for its first scan. */
const READY_TIMEOUT_MS = 30_000;
/** How long the agent's watch may last (its maximum); the caller's deadline usually ends it first. */
const WATCH_SECONDS = 3600;

/** What the watchers need. */
export interface WatcherDeps {
  /** The agent's file watching (streaming WatchDir). */
  fileWatches: WatchService;
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

const TYPES: Partial<Record<WatchLine['type'], EventType>> = {
  create: EventType.CREATE,
  modify: EventType.WRITE,
  delete: EventType.REMOVE,
};

/** envd's answers for one line of the agent's watch (none for overflow and end). */
export function watchAnswers(line: WatchLine, dir: string): WatchResponse[] {
  const rel = (p: string): string => (dir === '' ? p : p.slice(dir.length + 1));
  const ev = (type: EventType, p: string): WatchResponse => ({
    event: { case: 'filesystem', value: { name: rel(p), type } },
  });
  if (line.type === 'watching') return [{ event: { case: 'start', value: {} } }];
  if (line.type === 'rename')
    return [ev(EventType.RENAME, line.from ?? line.path), ev(EventType.CREATE, line.path)];
  const type = TYPES[line.type];
  return type === undefined || typeof line.path !== 'string' ? [] : [ev(type, line.path)];
}

/** Streaming and polled directory watchers. */
export class EnvdWatchers {
  constructor(private readonly d: WatcherDeps) {}

  /** WatchDir: the agent's watch, a start event once it is in place, then the events. */
  async *stream(ref: SessionRef, req: WatchDirRequest, ctx: HandlerContext): AsyncGenerator<WatchResponse> {
    checkRequest(req);
    const dir = workspacePath(req.path, this.d.workspace).relative;
    const query = {
      ...(dir !== '' ? { path: dir } : {}),
      recursive: req.recursive,
      timeoutSeconds: WATCH_SECONDS,
    };
    const lines = await this.d.fileWatches.open(ref, query, { signal: ctx.signal });
    try {
      for await (const item of withKeepalive(
        (lines as AsyncIterable<WatchLine>)[Symbol.asyncIterator](),
        keepaliveMs(ctx),
      )) {
        if (item === TICK) yield { event: { case: 'keepalive', value: {} } };
        else if (item.type === 'end') return;
        else yield* watchAnswers(item, dir);
      }
    } finally {
      lines.destroy();
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
