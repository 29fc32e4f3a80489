/**
 * The snapshot controller (docs/snapshots.md): an informer on SandboxSnapshots feeding a cache,
 * a work queue of snapshot keys running reconcileSnapshot, the copy tasks, and the restore runner
 * the session reconcile uses (ControllerDeps.restores). Part of the leader's workload
 * (runtime/workload.ts), like the pool controller: started with the other informers, stopped
 * after the session queue drained; stopping aborts every copy and restore in flight (the next
 * leader starts them again).
 */
import type * as k8s from '@kubernetes/client-node';
import { GROUP, SNAPSHOT_PLURAL, VERSION, type SandboxSession } from '@sandbox-platform/api';

import type { BackoffOptions } from '../state/backoff.js';
import type { JsonClient } from '../kube/json-client.js';
import { OwnedInformer, type ListPage } from '../kube/owned-informer.js';
import type { EventRecorder } from '../kube/ports.js';
import type { PodView } from '../state/views.js';
import { WorkQueue } from '../state/work-queue.js';
import type { Logger } from '../telemetry/log-port.js';
import { errorFields } from '../telemetry/logger.js';
import type { AgentArchiveClient } from './agent-archive.js';
import type { CopyOutResult } from './copy-out.js';
import { RestoreRunner } from './restore-runner.js';
import type { ObjectStore } from './s3-client.js';
import type { SnapshotLimits } from './snapshot-deps.js';
import {
  createSnapshotWriter,
  projectSnapshot,
  type SnapshotView,
  type SnapshotWriter,
} from './snapshot-kube.js';
import { reconcileSnapshot } from './snapshot-reconcile.js';
import { Tasks } from './tasks.js';

/** Settings of the controller. */
export interface SnapshotControllerOptions {
  readonly kc: k8s.KubeConfig;
  readonly clients: { readonly custom: k8s.CustomObjectsApi; readonly json: JsonClient };
  /** Watched namespaces; empty: all. */
  readonly namespaces: readonly string[];
  readonly store?: ObjectStore;
  readonly agent: AgentArchiveClient;
  readonly masterKey: Buffer;
  readonly session: (namespace: string, name: string) => Promise<SandboxSession | undefined>;
  readonly pod: (namespace: string, name: string) => PodView | undefined;
  /** Queues a session's reconcile (a restore ended, or the snapshot it waits for changed). */
  readonly wakeSession: (key: string) => void;
  readonly events: EventRecorder;
  readonly limits: SnapshotLimits;
  readonly backoff: BackoffOptions;
  readonly logger: Logger;
  /** Overrides for tests. */
  readonly writer?: SnapshotWriter;
}

/** Workers of the snapshot queue: reconciles are short (copies run as tasks). */
const SNAPSHOT_WORKERS = 2;

/** The controller. */
export class SnapshotController {
  /** The restores the session reconcile starts (ControllerDeps.restores). */
  readonly restores: RestoreRunner;
  private readonly cache = new Map<string, SnapshotView>();
  private readonly informers: Array<OwnedInformer<SnapshotView>> = [];
  private readonly queue: WorkQueue;
  private readonly tasks: Tasks<CopyOutResult>;

  constructor(private readonly opts: SnapshotControllerOptions) {
    const writer = opts.writer ?? createSnapshotWriter(opts.clients);
    this.tasks = new Tasks((key) => this.queue.add(key));
    this.restores = new RestoreRunner({
      store: opts.store,
      agent: opts.agent,
      snapshot: (ns, name) => this.get(ns, name),
      wake: opts.wakeSession,
      masterKey: opts.masterKey,
      concurrency: opts.limits.concurrency,
    });
    this.queue = new WorkQueue({
      concurrency: SNAPSHOT_WORKERS,
      backoff: opts.backoff,
      handler: (key) => {
        const [namespace = '', name = ''] = key.split('/');
        return reconcileSnapshot(namespace, name, {
          snapshots: { get: (ns, n) => this.get(ns, n), inNamespace: (ns) => this.inNamespace(ns) },
          writer,
          store: opts.store,
          agent: opts.agent,
          session: opts.session,
          pod: opts.pod,
          masterKey: opts.masterKey,
          tasks: this.tasks,
          events: opts.events,
          now: () => new Date(),
          limits: opts.limits,
          logger: opts.logger,
        });
      },
      hooks: {
        onError: (key, err, attempt, delayMs) =>
          opts.logger.warn('snapshot reconcile failed; retrying', {
            snapshot: key,
            attempt,
            retryInMs: delayMs,
            ...errorFields(err),
          }),
      },
    });
    for (const ns of opts.namespaces.length > 0 ? opts.namespaces : [''])
      this.informers.push(this.informer(ns));
  }

  /** Starts the informers (resolves once they listed), then queues every snapshot. */
  async start(): Promise<void> {
    await Promise.all(this.informers.map((i) => i.start()));
    this.opts.logger.info('snapshot controller started', {
      snapshots: this.cache.size,
      store: this.opts.store?.describe ?? 'none (snapshots fail with StorageNotConfigured)',
    });
    for (const key of this.cache.keys()) this.queue.add(key);
  }

  /** Stops the queue, aborts copies and restores, stops the informers. */
  async stop(): Promise<void> {
    await this.queue.shutdown(5000);
    this.tasks.stop();
    this.restores.stop();
    await Promise.all(this.informers.map((i) => i.stop()));
  }

  /** A snapshot from the cache. */
  get(namespace: string, name: string): SnapshotView | undefined {
    return this.cache.get(`${namespace}/${name}`);
  }

  /** The snapshots of a namespace (for the quotas). */
  inNamespace(namespace: string): SnapshotView[] {
    return [...this.cache.values()].filter((s) => s.metadata.namespace === namespace);
  }

  private informer(ns: string): OwnedInformer<SnapshotView> {
    const { custom } = this.opts.clients;
    return new OwnedInformer<SnapshotView>({
      kc: this.opts.kc,
      path: `/apis/${GROUP}/${VERSION}/${ns ? `namespaces/${ns}/` : ''}${SNAPSHOT_PLURAL}`,
      labelSelector: '',
      resource: ns ? `${SNAPSHOT_PLURAL} in ${ns}` : SNAPSHOT_PLURAL,
      logger: this.opts.logger,
      listPage: async (_selector, limit, _continue) =>
        (await (ns
          ? custom.listNamespacedCustomObject({
              group: GROUP,
              version: VERSION,
              namespace: ns,
              plural: SNAPSHOT_PLURAL,
              limit,
              _continue,
            })
          : custom.listClusterCustomObject({
              group: GROUP,
              version: VERSION,
              plural: SNAPSHOT_PLURAL,
              limit,
              _continue,
            }))) as ListPage,
      project: projectSnapshot,
      onChange: (view, change) => {
        const key = `${view.metadata.namespace}/${view.metadata.name}`;
        if (change === 'deleted') this.cache.delete(key);
        else this.cache.set(key, view);
        this.queue.add(key);
        this.restores.snapshotChanged(view.metadata.namespace, view.metadata.name);
      },
    });
  }
}
