/**
 * A watch cache of one resource in one namespace: client-node's ListWatch, restarted with capped
 * backoff on any error (client-node stops on every error but 410), with `synced` for /readyz.
 *
 * It caches projections, not objects: each watch event's object and each LIST page is reduced to
 * what the caller keeps (`project`) before ListWatch stores it, and the LIST is paged. With whole
 * objects and one unpaged LIST, a proxy watching 10,000 sessions and their Pods ran out of heap
 * (~255 MB) while listing at start, and again at every restart (`make bench-scale`, 2026-12-08).
 */
import * as k8s from '@kubernetes/client-node';

/** Minimal logger of the proxy. */
export interface Log {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
}

const MIN_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = 30_000;
/** Objects per LIST page. */
export const LIST_PAGE_SIZE = 500;

/** Event callbacks of a watch. */
export interface WatchEvents<T> {
  upsert(o: T, old?: T): void;
  remove(o: T): void;
}

/** One page of a LIST: typed (client-node's models) or raw JSON (custom objects: `continue`). */
export interface ListPage {
  readonly items: readonly unknown[];
  readonly metadata?: {
    readonly resourceVersion?: string;
    readonly _continue?: string;
    readonly continue?: string;
  };
}

/** What a watch lists and watches. */
export interface WatchSpec<T extends k8s.KubernetesObject> {
  /** Name in log lines. */
  what: string;
  path: string;
  /** One LIST page of at most `limit` objects, from `cont` (undefined: the first). */
  listPage: (limit: number, cont: string | undefined) => Promise<ListPage>;
  /** What is kept of an object (undefined: nothing, it is skipped). */
  project: (raw: unknown) => T | undefined;
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
    this.informer = new k8s.ListWatch<T>(
      spec.path,
      new ProjectingWatch(kc, spec.project),
      () => pagedList(spec),
      false,
      spec.labelSelector,
    );
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

/** The whole LIST, page by page, each object projected as its page arrives. */
export async function pagedList<T extends k8s.KubernetesObject>(
  spec: Pick<WatchSpec<T>, 'listPage' | 'project'>,
): Promise<k8s.KubernetesListObject<T>> {
  const items: T[] = [];
  let resourceVersion: string | undefined;
  let cont: string | undefined;
  do {
    const page = await spec.listPage(LIST_PAGE_SIZE, cont);
    // A paged LIST is one snapshot: the first page's resourceVersion is the one to watch from.
    resourceVersion ??= page.metadata?.resourceVersion;
    for (const raw of page.items) {
      const view = spec.project(raw);
      if (view) items.push(view);
    }
    cont = page.metadata?._continue || page.metadata?.continue || undefined;
  } while (cont);
  return { metadata: { resourceVersion }, items };
}

type WatchCallback = (phase: string, apiObj: unknown, watchObj?: unknown) => void;

/** A Watch that hands ListWatch projections instead of whole objects. */
class ProjectingWatch<T> extends k8s.Watch {
  constructor(
    kc: k8s.KubeConfig,
    private readonly project: (raw: unknown) => T | undefined,
  ) {
    super(kc);
  }

  override watch(
    path: string,
    queryParams: Record<string, string | number | boolean | undefined>,
    callback: WatchCallback,
    done: (err: unknown) => void,
  ): Promise<AbortController> {
    const projecting: WatchCallback = (phase, obj) => {
      if (phase !== 'ADDED' && phase !== 'MODIFIED' && phase !== 'DELETED') return callback(phase, obj);
      const view = this.project(obj);
      if (view) callback(phase, view);
    };
    return super.watch(path, queryParams, projecting, done);
  }
}
