/**
 * A watch cache of one resource in one namespace: client-node's ListWatch, restarted with capped
 * backoff on any error (client-node stops on every error but 410), with `synced` for /readyz.
 */
import * as k8s from '@kubernetes/client-node';

/** Minimal logger of the proxy. */
export interface Log {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
}

const MIN_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = 30_000;

/** Event callbacks of a watch. */
export interface WatchEvents<T> {
  upsert(o: T, old?: T): void;
  remove(o: T): void;
}

/** What a watch lists and watches. */
export interface WatchSpec<T extends k8s.KubernetesObject> {
  /** Name in log lines. */
  what: string;
  path: string;
  list: () => Promise<k8s.KubernetesListObject<T>>;
  labelSelector?: string;
}

/** A restarting informer of one path. */
export class RestartingWatch<T extends k8s.KubernetesObject> {
  private readonly informer: k8s.Informer<T> & k8s.ObjectCache<T>;
  private isSynced = false;
  private stopped = false;
  private failed = false;
  private backoffMs = MIN_BACKOFF_MS;
  private timer: NodeJS.Timeout | undefined;

  private readonly what: string;

  constructor(
    kc: k8s.KubeConfig,
    spec: WatchSpec<T>,
    events: WatchEvents<T>,
    private readonly log: Log,
  ) {
    this.what = spec.what;
    this.informer = k8s.makeInformer<T>(kc, spec.path, spec.list, spec.labelSelector);
    this.informer.on(k8s.ADD, (o) => events.upsert(o));
    this.informer.on(k8s.UPDATE, (o) => events.upsert(o));
    this.informer.on(k8s.DELETE, (o) => events.remove(o));
    this.informer.on(k8s.ERROR, (err: unknown) => this.onError(err));
  }

  synced(): boolean {
    return this.isSynced && !this.stopped;
  }

  /** Lists and watches; never rejects (see synced()). */
  async start(): Promise<void> {
    this.stopped = false;
    this.failed = false;
    try {
      await this.informer.start();
    } catch (err) {
      this.onError(err);
      return;
    }
    if (this.failed || this.stopped) return;
    this.isSynced = true;
    this.backoffMs = MIN_BACKOFF_MS;
    this.log.info('watch synced', { what: this.what });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.isSynced = false;
    if (this.timer) clearTimeout(this.timer);
    await this.informer.stop();
  }

  private onError(err: unknown): void {
    this.isSynced = false;
    this.failed = true;
    if (this.stopped) return;
    const delay = this.backoffMs;
    this.backoffMs = Math.min(delay * 2, MAX_BACKOFF_MS);
    this.log.warn('watch failed; restarting', { what: this.what, err: String(err), retryInMs: delay });
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.start();
    }, delay);
  }
}
