/**
 * The warm pool controller (docs/adr/0016-warm-pools.md): two informers (SandboxPools, and Pods
 * labelled sandbox.dev/pool) feeding the pool index, and a work queue of pool keys running
 * reconcilePool. It is part of the leader's workload (runtime/workload.ts): started with the other
 * informers, before the session queue runs, so a claim always reads a synced index; stopped after
 * the session queue drained.
 */
import type * as k8s from '@kubernetes/client-node';
import type { Registry } from 'prom-client';
import { GROUP, POOL_LABELS, POOL_PLURAL, VERSION, type BindSigner } from '@sandbox-platform/api';

import type { BackoffOptions } from '../state/backoff.js';
import type { JsonClient } from '../kube/json-client.js';
import { OwnedInformer, type ListPage } from '../kube/owned-informer.js';
import { ownerKey } from '../state/owner-key.js';
import { WorkQueue } from '../state/work-queue.js';
import type { PodBuildOptions } from '../resources/pod-options.js';
import type { Logger } from '../telemetry/log-port.js';
import { errorFields } from '../telemetry/logger.js';
import { createBindClient, type BindClient } from './bind-client.js';
import { PoolClaims } from './claims.js';
import { PoolIndex, type Change } from './pool-index.js';
import { createPoolWriter, type PoolWriter } from './pool-kube.js';
import { PoolMetrics } from './pool-metrics.js';
import { TemplateHashes, type PoolPodOptions } from './pool-pod.js';
import { reconcilePool } from './pool-reconcile.js';
import { projectPool, projectPoolPod, type PoolPodView, type PoolView } from './pool-view.js';
import { RefillHold } from './refill-hold.js';

/** Settings of the pool controller. */
export interface PoolControllerOptions {
  readonly kc: k8s.KubeConfig;
  readonly clients: {
    readonly core: k8s.CoreV1Api;
    readonly custom: k8s.CustomObjectsApi;
    readonly json: JsonClient;
  };
  /** Watched namespaces; empty: all. */
  readonly namespaces: readonly string[];
  readonly podOptions: PodBuildOptions;
  readonly signer: BindSigner;
  /** Port of the agents (AGENT_PORT) and deadline of one bind call. */
  readonly bind: { readonly port: number; readonly timeoutMs: number };
  readonly backoff: BackoffOptions;
  readonly registry: Registry;
  readonly logger: Logger;
  /**
   * Queues a session's reconcile (`namespace/name`): a change of a pool Pod bound to a session
   * wakes it (see poolPodChanged).
   */
  readonly wakeSession?: (key: string) => void;
  /** Overrides for tests: the bind client and the writer. */
  readonly bindClient?: BindClient;
  readonly writer?: PoolWriter;
}

/** Workers of the pool queue: pools are few, and a pass is a handful of writes. */
const POOL_CONCURRENCY = 2;
/** Warm Pods created per pass of one pool (a large pool fills in several passes). */
const MAX_CREATES_PER_PASS = 10;

/** The controller. */
export class PoolController {
  /** The claimer the session reconcile uses (ControllerDeps.pools). */
  readonly claims: PoolClaims;
  readonly index = new PoolIndex();
  private readonly informers: Array<OwnedInformer<PoolView> | OwnedInformer<PoolPodView>> = [];
  private readonly queue: WorkQueue;
  private readonly hashes = new TemplateHashes();
  private readonly podOptions: PoolPodOptions;
  private readonly hold = new RefillHold();

  constructor(private readonly opts: PoolControllerOptions) {
    const writer = opts.writer ?? createPoolWriter(opts.clients);
    const metrics = new PoolMetrics(opts.registry);
    this.podOptions = { podOptions: opts.podOptions, bindKeyHex: opts.signer.publicKeyHex };
    const hashOf = (pool: PoolView): string => this.hashOf(pool);
    this.queue = new WorkQueue({
      concurrency: POOL_CONCURRENCY,
      backoff: opts.backoff,
      handler: (key) => {
        const [namespace = '', name = ''] = key.split('/');
        return reconcilePool(namespace, name, {
          index: this.index,
          writer,
          podOptions: this.podOptions,
          hashOf,
          metrics,
          logger: opts.logger,
          now: () => new Date(),
          maxCreatesPerPass: MAX_CREATES_PER_PASS,
          holdMs: (ns, pool) => this.hold.holdMs(`${ns}/${pool}`, Date.now()),
        });
      },
      hooks: {
        onError: (key, err, attempt, delayMs) =>
          opts.logger.error('pool reconcile failed; retrying', {
            pool: key,
            attempt,
            retryInMs: delayMs,
            ...errorFields(err),
          }),
      },
    });
    this.claims = new PoolClaims({
      index: this.index,
      writer,
      bind: opts.bindClient ?? createBindClient(opts.bind),
      signer: opts.signer,
      hashOf,
      metrics,
      logger: opts.logger,
      wake: (namespace, pool) => this.queue.add(`${namespace}/${pool}`),
      hold: this.hold,
    });
    for (const ns of opts.namespaces.length > 0 ? opts.namespaces : ['']) {
      this.informers.push(this.poolInformer(ns), this.podInformer(ns));
    }
  }

  /** Starts the informers (resolves once both listed), then queues every pool. */
  async start(): Promise<void> {
    await Promise.all(this.informers.map((i) => i.start()));
    this.index.markSynced();
    this.opts.logger.info('pool controller started', { pools: this.poolKeys().length });
    for (const key of this.poolKeys()) this.queue.add(key);
  }

  /**
   * Queues every pool: their template hashes may have changed without a pool event (the default
   * RuntimeClass started or stopped applying), so outdated warm Pods are replaced now.
   */
  requeueAll(): void {
    for (const key of this.poolKeys()) this.queue.add(key);
  }

  /** Stops the queue (in-flight passes finish) and the informers. */
  async stop(): Promise<void> {
    await this.queue.shutdown(5000);
    this.index.markSynced(false);
    await Promise.all(this.informers.map((i) => i.stop()));
  }

  /** The template hash of a pool (cached: pool-pod.ts TemplateHashes). */
  private hashOf(pool: PoolView): string {
    return this.hashes.of(pool, this.podOptions);
  }

  private poolKeys(): string[] {
    const keys = new Set<string>();
    for (const ns of this.opts.namespaces.length > 0 ? this.opts.namespaces : [undefined]) {
      for (const pool of ns === undefined ? this.index.allPools() : this.index.poolsIn(ns))
        keys.add(`${pool.metadata.namespace}/${pool.metadata.name}`);
    }
    return [...keys];
  }

  private poolInformer(ns: string): OwnedInformer<PoolView> {
    const { custom } = this.opts.clients;
    const path = `/apis/${GROUP}/${VERSION}/${ns ? `namespaces/${ns}/` : ''}${POOL_PLURAL}`;
    return new OwnedInformer<PoolView>({
      kc: this.opts.kc,
      path,
      labelSelector: '',
      resource: ns ? `${POOL_PLURAL} in ${ns}` : POOL_PLURAL,
      logger: this.opts.logger,
      listPage: async (labelSelector, limit, _continue) =>
        (await (ns
          ? custom.listNamespacedCustomObject({
              group: GROUP,
              version: VERSION,
              namespace: ns,
              plural: POOL_PLURAL,
              limit,
              _continue,
            })
          : custom.listClusterCustomObject({
              group: GROUP,
              version: VERSION,
              plural: POOL_PLURAL,
              limit,
              _continue,
            }))) as ListPage,
      project: projectPool,
      onChange: (view, change) => {
        this.index.applyPool(view, change);
        if (change === 'deleted') {
          this.hashes.forget(view);
          this.hold.forget(`${view.metadata.namespace}/${view.metadata.name}`);
        }
        this.queue.add(`${view.metadata.namespace}/${view.metadata.name}`);
      },
    });
  }

  private podInformer(ns: string): OwnedInformer<PoolPodView> {
    const { core } = this.opts.clients;
    return new OwnedInformer<PoolPodView>({
      kc: this.opts.kc,
      path: `/api/v1/${ns ? `namespaces/${ns}/` : ''}pods`,
      labelSelector: POOL_LABELS.pool,
      resource: ns ? `pool pods in ${ns}` : 'pool pods',
      logger: this.opts.logger,
      listPage: (labelSelector, limit, _continue) =>
        ns
          ? core.listNamespacedPod({ namespace: ns, labelSelector, limit, _continue })
          : core.listPodForAllNamespaces({ labelSelector, limit, _continue }),
      project: projectPoolPod,
      onChange: (view, change) =>
        poolPodChanged(view, change, {
          index: this.index,
          wakePool: (key) => this.queue.add(key),
          wakeSession: this.opts.wakeSession,
        }),
    });
  }
}

/**
 * A pool Pod changed: the index learns it, its pool reconciles, and the session it is bound to
 * (its controller reference) reconciles too. The session is also woken by the child informers,
 * which see the same Pod through its session label, but its claim phase reads the bound Pod from
 * this index: woken by the other informer first, it could read the Pod as this informer had not
 * yet updated it (a bound Pod deleted, still here and not deleting), keep a Ready status naming a
 * Pod that was gone, and never be woken again (the e2e takeover spec's pooled victim stayed so
 * for 180 s in a clean-clone CI). Waking the session after the index has the change closes that.
 */
export function poolPodChanged(
  view: PoolPodView,
  change: Change,
  d: { index: PoolIndex; wakePool: (key: string) => void; wakeSession?: (key: string) => void },
): void {
  d.index.applyPod(view, change);
  if (view.pool) d.wakePool(`${view.metadata.namespace}/${view.pool}`);
  const session = ownerKey(view.metadata);
  if (session !== undefined) d.wakeSession?.(session);
}
