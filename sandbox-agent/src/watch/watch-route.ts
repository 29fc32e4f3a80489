/**
 * `GET /v1/watch?path=<dir>&recursive=true|false`: changes under a workspace directory as NDJSON
 * (docs/adr/0033). The directory must be inside the workspace after resolving symlinks (403
 * `path-forbidden` otherwise, 404 `not-found` when missing, 400 when not a directory). The answer
 * starts with `{"type":"watching"}` once every watch is in place, then one line per change in
 * the kernel's order, and ends with `{"type":"end","reason"}` (the directory went, the agent
 * stops). While the client does not read, at most WATCH_QUEUE_MAX_EVENTS events wait; the rest
 * are dropped and counted, and an `overflow` line says how many once it reads again.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { realpath, stat } from 'node:fs/promises';
import { join } from 'node:path';

import {
  NDJSON_CONTENT_TYPE,
  WATCH_QUEUE_MAX_EVENTS,
  type WatchLine,
  watchQuerySchema,
} from '@sandbox-platform/api';
import { Ajv } from 'ajv';

import { isWithin } from '../files/workspace-path.js';
import { HttpProblem } from '../http/problem.js';
import { validated } from '../http/validate.js';
import type { Logger } from '../log.js';
import { Watcher, WatchStartError } from './watcher.js';

const ajv = new Ajv({ strict: true, allErrors: false, coerceTypes: false });
const validateQuery = ajv.compile<{ path?: string; recursive?: boolean }>(watchQuerySchema);

/** Defaults of the watch options. */
export const WATCH_DEFAULTS = { helperPath: '/opt/sandbox-agent/sandbox-watch', maxWatches: 16 } as const;

/** Tunables of file watching. */
export interface WatchOptions {
  /** The static inotify helper. */
  helperPath: string;
  /** Watches open at a time. */
  maxWatches: number;
}

/** The open watches of the agent. */
export class Watches {
  private readonly open = new Set<(reason: string) => void>();
  private closing = false;

  constructor(
    private readonly options: WatchOptions & { workspace: string },
    private readonly logger: Logger,
  ) {}

  /** Serves one `GET /v1/watch`. */
  async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const query = parseQuery(new URL(req.url ?? '/', 'http://agent').searchParams);
    if (this.closing) throw new HttpProblem('watch-unavailable', 'the agent is stopping');
    if (this.open.size >= this.options.maxWatches) {
      throw new HttpProblem(
        'watch-unavailable',
        `the agent has its maximum of ${this.options.maxWatches} watches open`,
      );
    }
    const dir = await this.directory(query.path ?? '');
    const recursive = query.recursive ?? false;
    const stream = new WatchStream(res);
    let watcher: Watcher;
    try {
      watcher = await Watcher.start(this.options.helperPath, dir, recursive, {
        line: (line) => stream.send(line),
        end: (reason) => stream.end(reason),
      });
    } catch (err) {
      const reason = err instanceof WatchStartError ? err.message : String(err);
      throw new HttpProblem('watch-unavailable', `cannot watch the directory: ${reason}`, { cause: err });
    }
    const stop = (reason: string): void => {
      watcher.stop();
      stream.end(reason);
    };
    this.open.add(stop);
    res.once('close', () => {
      this.open.delete(stop);
      watcher.stop();
    });
    stream.start({ type: 'watching', path: dir.relative, recursive });
    this.logger.debug('watch started', { recursive });
  }

  /** Ends every watch with `agent-stopping` (the agent stops). */
  close(): void {
    this.closing = true;
    for (const stop of [...this.open]) stop('agent-stopping');
    this.open.clear();
  }

  /** The real directory of a workspace-relative path, confined to the workspace. */
  private async directory(path: string): Promise<{ absolute: string; relative: string }> {
    if (path.startsWith('/')) throw new HttpProblem('path-forbidden', 'absolute paths are not allowed');
    const segments = path.split('/').filter((s) => s !== '' && s !== '.');
    if (segments.includes('..')) throw new HttpProblem('path-forbidden', '".." is not allowed in paths');
    const root = this.options.workspace;
    const real = await realpath(join(root, ...segments)).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') throw new HttpProblem('not-found', 'the directory does not exist');
      throw new HttpProblem('path-forbidden', 'the path cannot be resolved', { cause: err });
    });
    if (!isWithin(root, real)) throw new HttpProblem('path-forbidden', 'the path leaves the workspace');
    if (!(await stat(real)).isDirectory())
      throw new HttpProblem('invalid-request', 'the path is not a directory');
    return { absolute: real, relative: real === root ? '' : real.slice(root.length + 1) };
  }
}

/** The query: `recursive` is `true` or `false` in the URL. */
function parseQuery(search: URLSearchParams): { path?: string; recursive?: boolean } {
  const out: Record<string, unknown> = {};
  for (const [name, value] of search) {
    if (Object.hasOwn(out, name))
      throw new HttpProblem('invalid-request', `query parameter ${name} is given twice`);
    out[name] = name === 'recursive' ? (value === 'true' ? true : value === 'false' ? false : value) : value;
  }
  return validated(validateQuery, out, 'the query');
}

/** The answer of one watch: lines written as they come, a bounded queue while the client is slow. */
class WatchStream {
  private queue: WatchLine[] = [];
  private dropped = 0;
  private done = false;

  constructor(private readonly res: ServerResponse) {
    res.on('drain', () => this.flush());
  }

  start(first: WatchLine): void {
    this.res.writeHead(200, { 'content-type': NDJSON_CONTENT_TYPE, 'cache-control': 'no-store' });
    this.res.write(JSON.stringify(first) + '\n');
  }

  send(line: WatchLine): void {
    if (this.done || !this.res.headersSent) return;
    if (this.res.writableNeedDrain || this.queue.length > 0) {
      if (this.queue.length < WATCH_QUEUE_MAX_EVENTS) this.queue.push(line);
      else this.dropped++;
      return;
    }
    this.res.write(JSON.stringify(line) + '\n');
  }

  end(reason: string): void {
    if (this.done || !this.res.headersSent) return;
    this.done = true;
    this.flush(true);
    this.res.end(JSON.stringify({ type: 'end', reason }) + '\n');
  }

  private flush(all = false): void {
    while (this.queue.length > 0 && (all || !this.res.writableNeedDrain)) {
      this.res.write(JSON.stringify(this.queue.shift()) + '\n');
    }
    if (this.queue.length === 0 && this.dropped > 0 && (all || !this.res.writableNeedDrain)) {
      this.res.write(JSON.stringify({ type: 'overflow', dropped: this.dropped }) + '\n');
      this.dropped = 0;
    }
  }
}
