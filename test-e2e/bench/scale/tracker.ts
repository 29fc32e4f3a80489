/**
 * Watches one collection (the bench's sessions, or the floor's Pods) and records, per object name,
 * when this process first saw it Ready and when it saw it deleted. A watch the API server ends is
 * resumed from the last resourceVersion seen, so no transition is lost or seen late; a 410 Gone is
 * reported (the figures of that window are then not trusted).
 */
import * as k8s from '@kubernetes/client-node';

import type { KubeHttp } from './kube-http.js';

/** What is recorded for one object. */
export interface Seen {
  readyAt?: number;
  /** status.readyTime of a session (the operator's clock), ms since epoch. */
  readyTime?: number;
  goneAt?: number;
}

type Obj = {
  metadata?: { name?: string; resourceVersion?: string };
  status?: { conditions?: Array<{ type?: string; status?: string }>; readyTime?: string };
};

/** The tracker of one collection. */
export class ReadyTracker {
  readonly seen = new Map<string, Seen>();
  private abort?: { abort(): void };
  private closed = false;
  private rv = '';
  /** Failures of the watch (reported with the figures). */
  readonly errors: string[] = [];

  private constructor(
    private readonly kc: k8s.KubeConfig,
    private readonly path: string,
  ) {}

  /** Starts watching `path` from now (a LIST first gives the resourceVersion to start at). */
  static async start(kc: k8s.KubeConfig, http: KubeHttp, path: string): Promise<ReadyTracker> {
    const t = new ReadyTracker(kc, path);
    const list = (await http.get(`${path}?limit=1`)) as { metadata?: { resourceVersion?: string } };
    if (!list.metadata?.resourceVersion) throw new Error(`LIST ${path}: no resourceVersion`);
    t.rv = list.metadata.resourceVersion;
    await t.open();
    return t;
  }

  /** Number of objects seen Ready / seen deleted. */
  counts(): { ready: number; gone: number } {
    let ready = 0;
    let gone = 0;
    for (const s of this.seen.values()) {
      if (s.readyAt !== undefined) ready++;
      if (s.goneAt !== undefined) gone++;
    }
    return { ready, gone };
  }

  /** Resolves once `test()` holds, polling every 100 ms; rejects after `timeoutMs` with `what`. */
  async until(test: () => boolean, timeoutMs: number, what: () => string): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!test()) {
      if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** Stops watching. */
  stop(): void {
    this.closed = true;
    this.abort?.abort();
  }

  private async open(): Promise<void> {
    const watch = new k8s.Watch(this.kc);
    this.abort = await watch.watch(
      this.path,
      { resourceVersion: this.rv, allowWatchBookmarks: true },
      (type: string, obj: Obj) => this.event(type, obj),
      (err: unknown) => {
        if (this.closed) return;
        if (err) this.errors.push(message(err));
        setTimeout(() => void this.open().catch((e: unknown) => this.errors.push(message(e))), 200);
      },
    );
  }

  private event(type: string, obj: Obj): void {
    const now = Date.now();
    if (obj.metadata?.resourceVersion) this.rv = obj.metadata.resourceVersion;
    if (type === 'ERROR') {
      this.errors.push(`watch ERROR ${JSON.stringify(obj).slice(0, 200)}`);
      return;
    }
    const name = obj.metadata?.name;
    if (!name || type === 'BOOKMARK') return;
    let s = this.seen.get(name);
    if (!s) this.seen.set(name, (s = {}));
    if (type === 'DELETED') {
      s.goneAt ??= now;
      return;
    }
    if (s.readyAt === undefined && isReady(obj)) {
      s.readyAt = now;
      if (obj.status?.readyTime) s.readyTime = Date.parse(obj.status.readyTime);
    }
  }
}

function isReady(obj: Obj): boolean {
  return (obj.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : JSON.stringify(err);
}
