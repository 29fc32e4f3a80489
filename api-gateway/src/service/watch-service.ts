/**
 * File watching of a session (ADR 0033), for the REST route's three transports (NDJSON, SSE,
 * WebSocket): resolve the Ready Agent session as exec does, open the agent's watch, and give the
 * caller its lines with exactly one end line whose reason says why it ended: `session-deleted`
 * or `session-suspended` (seen in the session store, which is also watched meanwhile, so the
 * caller learns it even before the Pod's agent goes), `timeout` (the route's limit), or the
 * agent's own reason (`directory-gone`, `agent-stopping`), `agent-closed` when the connection
 * broke. A watch is not activity: an idle session still suspends or expires while watched.
 */
import { Readable } from 'node:stream';

import type { WatchLine } from '@sandbox-platform/api';

import { ProblemError } from '../errors.js';
import type { WatchTransport } from '../exec/agent/agent-watch.js';
import type { CallOptions } from '../exec/types.js';
import type { SessionStore } from '../sessions/store.js';
import type { ExecService } from './exec-service.js';
import type { SessionRef } from './process-service.js';

/** How long one wait for a change of the session lasts before it is renewed. */
const STORE_WAIT_MS = 30_000;

/** Dependencies of the watch service. */
export interface WatchServiceDeps {
  execs: ExecService;
  store: Pick<SessionStore, 'get' | 'waitForChange'>;
  /** Absent when the gateway was built without the Agent's interactive calls. */
  watch: WatchTransport | undefined;
}

/** What a watch asks for. */
export interface WatchRequest {
  path?: string;
  recursive?: boolean;
  /** Seconds before the gateway ends the watch with `timeout`. */
  timeoutSeconds: number;
  waitSeconds?: number;
}

/** Opens watches. */
export class WatchService {
  constructor(private readonly d: WatchServiceDeps) {}

  /** The watch's lines (object mode, pulled by the caller), ending with one end line. */
  async open(ref: SessionRef, req: WatchRequest, opts: CallOptions = {}): Promise<Readable> {
    const target = await this.d.execs.resolveTarget(ref.namespace, ref.name, req.waitSeconds, opts);
    if (target.transport !== 'Agent' || !this.d.watch) {
      throw new ProblemError(
        'not-supported',
        `session ${ref.name} uses execTransport ${target.transport}: file watching needs the Agent transport`,
      );
    }
    const query = {
      ...(req.path !== undefined ? { path: req.path } : {}),
      ...(req.recursive !== undefined ? { recursive: req.recursive } : {}),
    };
    const upstream = await this.d.watch.open(target, query, opts);
    return Readable.from(this.lines(ref, upstream, req.timeoutSeconds * 1000), {
      objectMode: true,
      highWaterMark: 16,
    });
  }

  private async *lines(ref: SessionRef, upstream: Readable, timeoutMs: number): AsyncGenerator<WatchLine> {
    let cut: string | undefined;
    const stop = (reason: string): void => {
      cut ??= reason;
      upstream.destroy();
    };
    const timer = setTimeout(() => stop('timeout'), timeoutMs);
    const ended = new AbortController();
    void this.followSession(ref, ended.signal, stop);
    let reason: string | undefined;
    try {
      for await (const line of upstream as AsyncIterable<WatchLine>) {
        if (line.type === 'end') {
          reason = line.reason;
          break;
        }
        yield line;
      }
    } catch {
      // The agent's connection broke (its Pod went) or was cut here: the reason is found below.
    } finally {
      clearTimeout(timer);
      ended.abort();
      upstream.destroy();
    }
    yield { type: 'end', reason: cut ?? this.sessionEnd(ref) ?? reason ?? 'agent-closed' };
  }

  /** Watches the session in the store; stops the watch when it is deleted or suspended. */
  private async followSession(
    ref: SessionRef,
    signal: AbortSignal,
    stop: (reason: string) => void,
  ): Promise<void> {
    while (!signal.aborted) {
      const end = this.sessionEnd(ref);
      if (end) return stop(end);
      await this.d.store.waitForChange(ref.namespace, ref.name, STORE_WAIT_MS, signal).catch(() => undefined);
    }
  }

  private sessionEnd(ref: SessionRef): string | undefined {
    const session = this.d.store.get(ref.namespace, ref.name);
    if (!session || session.metadata?.deletionTimestamp) return 'session-deleted';
    if (session.spec.suspend === true) return 'session-suspended';
    return undefined;
  }
}
