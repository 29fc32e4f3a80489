/**
 * One namespace's cache of sandbox Pods (label `sandbox.dev/session`), for the Pod identity check
 * (sessions/pod-identity.ts). client-node's ListWatch (list, then watch from the list's
 * resourceVersion, relist on 410 Gone) with what a long-running server needs besides:
 *
 * - bounded memory: every object is projected (sessions/pod-record.ts) before ListWatch stores it,
 *   by a Watch that hands it projections and a paged LIST that projects page by page, and at most
 *   `maxPods` Pods are kept per namespace (anyone with `edit` there can create labelled Pods: past
 *   the bound, new ones are not cached, so a session whose Pod is not cached stays unverified);
 * - restarts: ListWatch stops for good on any error other than 410; it is restarted with capped
 *   exponential backoff and reports `synced` false meanwhile, as the session cache does.
 */
import * as k8s from '@kubernetes/client-node';
import { LABELS } from '@sandbox-platform/api';
import type { FastifyBaseLogger } from 'fastify';

import { projectPodRecord, type PodRecord } from './pod-record.js';

/** What the store needs from a namespace's Pod cache. */
export interface PodCache {
  readonly namespace: string;
  synced(): boolean;
  get(name: string): PodRecord | undefined;
  /** Pods cached. */
  size(): number;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** One page of a Pod LIST as client-node returns it. */
export interface PodListPage {
  readonly items: readonly unknown[];
  readonly metadata?: { readonly resourceVersion?: string; readonly _continue?: string };
}

/** Fetches one page of the namespace's Pods with the label selector. */
export type PodLister = (
  namespace: string,
  labelSelector: string,
  limit: number,
  cont: string | undefined,
) => Promise<PodListPage>;

type Log = Pick<FastifyBaseLogger, 'info' | 'warn' | 'debug'>;
type WatchCallback = (phase: string, apiObj: unknown, watchObj?: unknown) => void;

/** Pods the gateway selects: every Pod labelled with a session (the operator labels each one). */
export const SANDBOX_POD_SELECTOR = LABELS.session;
const PAGE_SIZE = 500;
const MIN_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = 30_000;

/** Watch cache of the sandbox Pods of one namespace, restarted on errors. */
export class NamespacePodWatch implements PodCache {
  readonly namespace: string;
  private readonly listWatch: k8s.ListWatch<k8s.KubernetesObject>;
  private count = 0;
  private isSynced = false;
  private stopped = false;
  private failed = false;
  /** Pods not cached because the bound was reached, since the last warning. */
  private dropped = 0;
  private backoffMs = MIN_BACKOFF_MS;
  private retryTimer: NodeJS.Timeout | undefined;

  /** `onChange` gets every added, updated or deleted Pod (after the cache changed). */
  constructor(
    clients: { watch: k8s.KubeConfig; list: PodLister },
    namespace: string,
    private readonly opts: { maxPods: number; onChange: (pod: PodRecord) => void; log: Log },
  ) {
    this.namespace = namespace;
    const path = `/api/v1/namespaces/${namespace}/pods`;
    const watch = new ProjectingWatch(clients.watch, (raw) => this.admit(raw));
    this.listWatch = new k8s.ListWatch(
      path,
      watch,
      () => this.list(clients.list),
      false,
      SANDBOX_POD_SELECTOR,
    );
    this.listWatch.on(k8s.ADD, (o) => this.changed(o, +1));
    this.listWatch.on(k8s.UPDATE, (o) => this.changed(o, 0));
    this.listWatch.on(k8s.DELETE, (o) => this.changed(o, -1));
    this.listWatch.on(k8s.ERROR, (err: unknown) => this.onError(err));
  }

  synced(): boolean {
    return this.isSynced && !this.stopped;
  }

  get(name: string): PodRecord | undefined {
    return this.listWatch.get(name, this.namespace) as unknown as PodRecord | undefined;
  }

  size(): number {
    return this.count;
  }

  /** Lists and starts watching; resolves once listed or once a failure went to the restart logic. */
  async start(): Promise<void> {
    this.stopped = false;
    this.failed = false;
    try {
      await this.listWatch.start();
    } catch (err) {
      this.onError(err);
      return;
    }
    if (this.failed || this.stopped) return;
    this.isSynced = true;
    this.backoffMs = MIN_BACKOFF_MS;
    this.opts.log.info({ namespace: this.namespace, pods: this.count }, 'pod cache synced');
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.isSynced = false;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    await this.listWatch.stop();
  }

  private changed(obj: k8s.KubernetesObject, delta: number): void {
    this.count += delta;
    this.opts.onChange(obj as unknown as PodRecord);
  }

  /** The projection to cache, or undefined (malformed, or a new Pod past the bound). */
  private admit(raw: unknown): PodRecord | undefined {
    const pod = projectPodRecord(raw);
    if (!pod || this.count < this.opts.maxPods || this.get(pod.metadata.name)) return pod;
    this.drop();
    return undefined;
  }

  private drop(): void {
    if (this.dropped++ % 1000 === 0) {
      this.opts.log.warn(
        { namespace: this.namespace, maxPods: this.opts.maxPods, dropped: this.dropped },
        'pod cache full: labelled Pods past the bound are not cached (their sessions stay unverified)',
      );
    }
  }

  private async list(lister: PodLister): Promise<k8s.KubernetesListObject<k8s.KubernetesObject>> {
    const items: k8s.KubernetesObject[] = [];
    let resourceVersion: string | undefined;
    let cont: string | undefined;
    do {
      const page = await lister(this.namespace, SANDBOX_POD_SELECTOR, PAGE_SIZE, cont);
      resourceVersion ??= page.metadata?.resourceVersion;
      for (const raw of page.items) {
        const pod = projectPodRecord(raw);
        if (!pod) continue;
        if (items.length >= this.opts.maxPods) this.drop();
        else items.push(pod);
      }
      cont = page.metadata?._continue || undefined;
    } while (cont);
    return { apiVersion: 'v1', kind: 'PodList', metadata: { resourceVersion }, items };
  }

  private onError(err: unknown): void {
    this.isSynced = false;
    this.failed = true;
    if (this.stopped) return;
    const delay = this.backoffMs;
    this.backoffMs = Math.min(this.backoffMs * 2, MAX_BACKOFF_MS);
    this.opts.log.warn({ namespace: this.namespace, err, retryInMs: delay }, 'pod watch failed; restarting');
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      void this.start();
    }, delay);
  }
}

/** A Watch that hands ListWatch projections instead of whole Pods. */
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
      // A deletion is always passed on (projected without the bound): the cache must forget it.
      const view = phase === 'DELETED' ? projectPodRecord(obj) : this.project(obj);
      if (view) callback(phase, view);
    };
    return super.watch(path, queryParams, projecting, done);
  }
}
