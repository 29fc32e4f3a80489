/**
 * envd's Filesystem service. Stat, list, make dir, move and remove are short scripts run in the
 * sandbox (fs-scripts.ts); watching is a polling watcher process in the sandbox (watch-scripts.ts,
 * watcher.ts). Paths are resolved in the workspace (paths.ts).
 */
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from '@connectrpc/connect';

import { ProblemError } from '../../errors.js';
import type { ExecResult } from '../../exec/types.js';
import type { ExecService } from '../../service/exec-service.js';
import type { SessionRef } from '../../service/process-service.js';
import type { EntryInfo, Filesystem } from '../gen/filesystem/filesystem_pb.js';
import { guarded, guardedStream } from './errors.js';
import {
  EXIT_EXISTS,
  EXIT_NOT_DIRECTORY,
  EXIT_NOT_FOUND,
  listScript,
  makeDirScript,
  moveScript,
  parseEntries,
  removeScript,
  statScript,
} from './fs-scripts.js';
import { workspaceEntry, workspacePath } from './paths.js';
import { callOptions, runScript, sessionOf, stderrLine, stdoutBytes } from './sandbox-calls.js';
import type { EnvdWatchers } from './watcher.js';

/** Deepest listing (E2B sets none; this keeps a listing's time bounded). */
export const MAX_LIST_DEPTH = 64;

/** What the service needs. */
export interface FilesystemServiceDeps {
  execs: ExecService;
  watchers: EnvdWatchers;
  /** The workspace's path in the sandbox (paths.ts). */
  workspace: string;
}

/** The outcome of a script as an error, when it failed. */
export function scriptFailure(r: ExecResult, path: string): Error | undefined {
  if (r.exitCode === 0) return undefined;
  const quoted = JSON.stringify(path);
  if (r.exitCode === EXIT_NOT_FOUND) return new ProblemError('not-found', `path ${quoted} does not exist`);
  if (r.exitCode === EXIT_NOT_DIRECTORY)
    return new ProblemError('invalid-request', `path ${quoted} is not a directory`);
  if (r.exitCode === EXIT_EXISTS)
    return new ConnectError(`path ${quoted} already exists`, Code.AlreadyExists);
  return new ProblemError('invalid-request', `${quoted}: ${stderrLine(r)}`);
}

/** envd's Filesystem service. */
export class EnvdFilesystem {
  constructor(private readonly d: FilesystemServiceDeps) {}

  /** The Connect implementation (errors become Connect errors with the SDKs' codes). */
  impl(): Partial<ServiceImpl<typeof Filesystem>> {
    const w = this.d.watchers;
    const root = this.d.workspace;
    return {
      stat: (req, ctx) => guarded(() => this.one(ctx, statScript(), workspacePath(req.path, root), [])),
      makeDir: (req, ctx) =>
        guarded(() => this.one(ctx, makeDirScript(), workspaceEntry(req.path, root), [])),
      move: (req, ctx) =>
        guarded(() =>
          this.one(ctx, moveScript(), workspaceEntry(req.source, root), [
            workspaceEntry(req.destination, root).absolute,
          ]),
        ),
      listDir: (req, ctx) => guarded(() => this.list(ctx, req.path, req.depth)),
      remove: (req, ctx) => guarded(() => this.remove(ctx, req.path)),
      watchDir: (req, ctx) => guardedStream(() => w.stream(sessionOf(ctx), req, ctx)),
      createWatcher: (req, ctx) => guarded(() => w.create(sessionOf(ctx), req, callOptions(ctx))),
      getWatcherEvents: (req, ctx) =>
        guarded(() => w.events(sessionOf(ctx), req.watcherId, callOptions(ctx))),
      removeWatcher: (req, ctx) => guarded(() => w.remove(sessionOf(ctx), req.watcherId, callOptions(ctx))),
    };
  }

  private async run(
    ctx: HandlerContext,
    script: string,
    args: readonly string[],
  ): Promise<{ ref: SessionRef; result: ExecResult }> {
    const ref = sessionOf(ctx);
    const result = await runScript(this.d.execs, ref, { script, args }, callOptions(ctx));
    return { ref, result };
  }

  /** A script printing one entry: stat, make dir, move. */
  private async one(
    ctx: HandlerContext,
    script: string,
    path: { absolute: string },
    more: string[],
  ): Promise<{ entry: EntryInfo }> {
    const { result } = await this.run(ctx, script, [path.absolute, ...more]);
    const failed = scriptFailure(result, path.absolute);
    if (failed) throw failed;
    const entry = parseEntries(stdoutBytes(result))[0];
    if (!entry) throw new ProblemError('internal', 'the sandbox printed no entry');
    return { entry };
  }

  private async list(ctx: HandlerContext, path: string, depth: number): Promise<{ entries: EntryInfo[] }> {
    if (depth > MAX_LIST_DEPTH)
      throw new ProblemError('invalid-request', `depth must be at most ${MAX_LIST_DEPTH}`);
    const p = workspacePath(path, this.d.workspace);
    const { result } = await this.run(ctx, listScript(), [p.absolute, String(Math.max(1, depth))]);
    const failed = scriptFailure(result, p.absolute);
    if (failed) throw failed;
    if (result.truncated) {
      throw new ConnectError(
        `the listing of ${JSON.stringify(p.absolute)} exceeds the output limit; list a smaller depth or directory`,
        Code.FailedPrecondition,
      );
    }
    return { entries: parseEntries(stdoutBytes(result)) };
  }

  private async remove(ctx: HandlerContext, path: string): Promise<object> {
    const p = workspaceEntry(path, this.d.workspace);
    const { result } = await this.run(ctx, removeScript(), [p.absolute]);
    const failed = scriptFailure(result, p.absolute);
    if (failed) throw failed;
    return {};
  }
}
