/**
 * One namespace's SandboxSession watch cache: client-node's ListWatch plus what it lacks for a
 * long-running server. client-node stops a ListWatch on any error other than 410 (which it handles
 * by relisting); we restart it with capped exponential backoff and report `synced` false meanwhile,
 * so /readyz fails instead of the replica serving from a cache that silently stopped updating.
 */
import * as k8s from '@kubernetes/client-node';
import type { SandboxSession } from '@sandbox-platform/api';
import { GROUP, PLURAL, VERSION } from '@sandbox-platform/api';
import type { FastifyBaseLogger } from 'fastify';

/** What the store needs from a namespace cache. */
export interface NamespaceCache {
  readonly namespace: string;
  synced(): boolean;
  get(name: string): SandboxSession | undefined;
  list(): SandboxSession[];
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** Event callbacks of a namespace cache. */
export interface CacheEvents {
  onUpsert(s: SandboxSession): void;
  onDelete(s: SandboxSession): void;
}

type Log = Pick<FastifyBaseLogger, 'info' | 'warn' | 'debug'>;

const MIN_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = 30_000;

/** Watch cache of the SandboxSessions of one namespace, restarted on errors. */
export class NamespaceWatch implements NamespaceCache {
  readonly namespace: string;
  private readonly informer: k8s.Informer<k8s.KubernetesObject> & k8s.ObjectCache<k8s.KubernetesObject>;
  private isSynced = false;
  private stopped = false;
  /** Set by an error during start(): client-node reports a failed list through ERROR, not by rejecting. */
  private failed = false;
  private backoffMs = MIN_BACKOFF_MS;
  private retryTimer: NodeJS.Timeout | undefined;

  /**
   * `clients.list` makes the lists (the REST client, with its deadline: a list that hangs would
   * keep the cache unsynced forever); `clients.watch` the watches.
   */
  constructor(
    clients: { watch: k8s.KubeConfig; list: k8s.CustomObjectsApi },
    namespace: string,
    events: CacheEvents,
    private readonly log: Log,
  ) {
    this.namespace = namespace;
    const path = `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/${PLURAL}`;
    const listFn = (): Promise<k8s.KubernetesListObject<k8s.KubernetesObject>> =>
      clients.list.listNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace,
        plural: PLURAL,
      }) as Promise<k8s.KubernetesListObject<k8s.KubernetesObject>>;
    this.informer = k8s.makeInformer(clients.watch, path, listFn);
    this.informer.on(k8s.ADD, (o) => events.onUpsert(o as SandboxSession));
    this.informer.on(k8s.UPDATE, (o) => events.onUpsert(o as SandboxSession));
    this.informer.on(k8s.DELETE, (o) => events.onDelete(o as SandboxSession));
    this.informer.on(k8s.ERROR, (err: unknown) => this.onError(err));
  }

  synced(): boolean {
    return this.isSynced && !this.stopped;
  }

  get(name: string): SandboxSession | undefined {
    return this.informer.get(name, this.namespace) as SandboxSession | undefined;
  }

  list(): SandboxSession[] {
    return this.informer.list(this.namespace) as SandboxSession[];
  }

  /**
   * Lists and starts watching; resolves once the first list is in the cache, or once a failure was
   * handed to the restart logic (it never rejects: check synced()).
   */
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
    this.log.info({ namespace: this.namespace }, 'session cache synced');
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.isSynced = false;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    await this.informer.stop();
  }

  private onError(err: unknown): void {
    this.isSynced = false;
    this.failed = true;
    if (this.stopped) return;
    const delay = this.backoffMs;
    this.backoffMs = Math.min(this.backoffMs * 2, MAX_BACKOFF_MS);
    this.log.warn({ namespace: this.namespace, err, retryInMs: delay }, 'session watch failed; restarting');
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      void this.start();
    }, delay);
  }
}
