/**
 * A label-selected informer on the operator's Pods or Secrets that caches only projections
 * (state/views.ts). Built on client-node's ListWatch (list, then watch from the list's
 * resourceVersion, relist on 410 Gone) with two additions:
 *
 * - a Watch that projects each event object before ListWatch stores it, and a paged LIST that
 *   projects page by page, so whole Pods and Secret data never accumulate in memory;
 * - restart after errors: ListWatch stops for good on a watch or list error, so we restart it
 *   with a capped exponential delay (1 s doubling, at most 5 s, so an API server that came back
 *   is seen within 5 s: docs/adr/0022), and start() only resolves once the first LIST succeeded.
 *   The delay is reset by a successful LIST or a watch event, not by ListWatch's CONNECT, which
 *   it emits before every attempt (a denied LIST would otherwise be retried every second).
 */
import * as k8s from '@kubernetes/client-node';

import type { Logger } from '../telemetry/log-port.js';
import { errorFields } from '../telemetry/logger.js';
import type { ChildMetadata } from '../state/views.js';

/** One page of a LIST, as client-node returns it. */
export interface ListPage {
  readonly items: readonly unknown[];
  readonly metadata?: { readonly resourceVersion?: string; readonly _continue?: string };
}

/** Informer parameters. */
export interface OwnedInformerOptions<V> {
  readonly kc: k8s.KubeConfig;
  /** Watch path, e.g. /api/v1/pods or /api/v1/namespaces/NS/secrets. */
  readonly path: string;
  readonly labelSelector: string;
  /** Fetches one LIST page. */
  readonly listPage: (labelSelector: string, limit: number, cont: string | undefined) => Promise<ListPage>;
  readonly project: (raw: unknown) => V | undefined;
  /** Called for every added, updated or deleted object (after the cache changed). */
  readonly onChange: (view: V, change: 'added' | 'updated' | 'deleted') => void;
  readonly logger: Logger;
  /** For logs: pods, secrets. */
  readonly resource: string;
  readonly pageSize?: number;
  readonly restartDelayMs?: number;
  readonly maxRestartDelayMs?: number;
}

type Projected = { readonly metadata: ChildMetadata };
type WatchCallback = (phase: string, apiObj: unknown, watchObj?: unknown) => void;

/** The informer and its cache. */
export class OwnedInformer<V extends Projected> {
  private readonly listWatch: k8s.ListWatch<k8s.KubernetesObject>;
  private synced = false;
  private stopped = false;
  private failures = 0;
  private restartTimer?: NodeJS.Timeout;

  constructor(private readonly opts: OwnedInformerOptions<V>) {
    const watch = new ProjectingWatch(opts.kc, (raw) => opts.project(raw));
    this.listWatch = new k8s.ListWatch(opts.path, watch, () => this.list(), false, opts.labelSelector);
    const changed =
      (change: 'added' | 'updated' | 'deleted') =>
      (obj: k8s.KubernetesObject): void => {
        this.failures = 0;
        opts.onChange(obj as unknown as V, change);
      };
    this.listWatch.on(k8s.ADD, changed('added'));
    this.listWatch.on(k8s.UPDATE, changed('updated'));
    this.listWatch.on(k8s.DELETE, changed('deleted'));
    this.listWatch.on(k8s.ERROR, (err: unknown) => this.restartLater(err));
  }

  /** True once the first LIST completed. */
  get hasSynced(): boolean {
    return this.synced;
  }

  /** The cached view, if any. */
  get(namespace: string, name: string): V | undefined {
    return this.listWatch.get(name, namespace) as unknown as V | undefined;
  }

  /** Number of cached objects. */
  size(): number {
    return this.listWatch.list().length;
  }

  /** Starts listing and watching; resolves after the first successful LIST (retrying until then). */
  async start(): Promise<void> {
    this.stopped = false;
    await this.listWatch.start();
    while (!this.synced && !this.stopped) {
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  /** Stops watching. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.restartTimer);
    await this.listWatch.stop();
  }

  private async list(): Promise<k8s.KubernetesListObject<k8s.KubernetesObject>> {
    const items: k8s.KubernetesObject[] = [];
    let resourceVersion: string | undefined;
    let cont: string | undefined;
    do {
      const page = await this.opts.listPage(this.opts.labelSelector, this.opts.pageSize ?? 500, cont);
      resourceVersion ??= page.metadata?.resourceVersion;
      for (const raw of page.items) {
        const view = this.opts.project(raw);
        if (view) items.push(view as unknown as k8s.KubernetesObject);
      }
      cont = page.metadata?._continue || undefined;
    } while (cont);
    this.synced = true;
    this.failures = 0;
    return { metadata: { resourceVersion }, items };
  }

  private restartLater(err: unknown): void {
    if (this.stopped) return;
    this.failures++;
    const base = this.opts.restartDelayMs ?? 1000;
    const delay = Math.min(base * 2 ** Math.min(this.failures - 1, 10), this.opts.maxRestartDelayMs ?? 5000);
    this.opts.logger.warn('informer stopped; restarting', {
      resource: this.opts.resource,
      delayMs: delay,
      ...errorFields(err),
    });
    clearTimeout(this.restartTimer);
    this.restartTimer = setTimeout(() => {
      if (this.stopped) return;
      this.listWatch.start().catch((e: unknown) => this.restartLater(e));
    }, delay);
  }
}

/** A Watch that hands ListWatch projections instead of whole objects. */
class ProjectingWatch extends k8s.Watch {
  constructor(
    kc: k8s.KubeConfig,
    private readonly project: (raw: unknown) => unknown,
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
