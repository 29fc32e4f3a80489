/* eslint-disable @typescript-eslint/require-await -- in-memory fakes implement async ports synchronously */
/**
 * An in-memory warm pool world for unit tests: the PoolIndex (as the informers would fill it), a
 * PoolWriter with resourceVersion preconditions and injectable conflicts, and a bind client that
 * behaves like warm agents (it verifies the signature with the real key, accepts one bind per Pod,
 * then only that token). Pool Pods also go into the FakeCluster's Pod store, where the session
 * reconcile's ensurePod and suspendPod look for them.
 */
import type { V1Pod } from '@kubernetes/client-node';
import {
  bindSigner,
  bindVerifyKey,
  verifyBindSignature,
  type BindPayload,
  type BindRequest,
  type SandboxPoolSpec,
  type SandboxPoolStatus,
} from '@sandbox-platform/api';

import { AlreadyExistsError } from '../../src/kube/errors.js';
import type { WriteOutcome } from '../../src/kube/ports.js';
import type { BindClient, BindOutcome } from '../../src/pool/bind-client.js';
import { PoolClaims } from '../../src/pool/claims.js';
import { PoolIndex } from '../../src/pool/pool-index.js';
import type { ClaimOutcome, PoolWriter } from '../../src/pool/pool-kube.js';
import { PoolMetrics } from '../../src/pool/pool-metrics.js';
import { templateHash, type PoolPodOptions } from '../../src/pool/pool-pod.js';
import { projectPoolPod, type PoolPodView, type PoolView } from '../../src/pool/pool-view.js';
import type { RefillHold } from '../../src/pool/refill-hold.js';
import type { SessionRef } from '../../src/resources/metadata.js';
import type { FakeCluster } from './fake-cluster.js';
import { MASTER_KEY, MemoryLogger } from './fakes.js';
import * as prom from 'prom-client';

/** What a fake agent does with binds. */
export type AgentBehaviour = 'agent' | 'refuse' | 'silent';

/** The fake world. */
export class FakePools {
  readonly index = new PoolIndex();
  readonly signer = bindSigner(MASTER_KEY);
  readonly ops: string[] = [];
  readonly statuses: Array<{ pool: string; status: SandboxPoolStatus }> = [];
  readonly woken: string[] = [];
  /** Pods whose next claim answers 409 (as if claimed or deleted by someone else meanwhile). */
  readonly conflictOnClaim = new Set<string>();
  /** How each Pod's agent answers binds (default: a real agent's rules). */
  readonly behaviour = new Map<string, AgentBehaviour>();
  /** When set, each claim patch answers only once this settles (else at once). */
  claimAnswer?: Promise<void>;
  /** Called as each bind call arrives (tests look at what holds while a claim is in flight). */
  onBind?: (pod: string) => void;
  /** Bound agents: Pod name -> the bind accepted. */
  readonly bound = new Map<string, BindPayload>();
  readonly registry = new prom.Registry();
  readonly metrics = new PoolMetrics(this.registry);
  readonly logger = new MemoryLogger();
  /** Names handed to created Pods, in order. */
  private names = 0;
  private rv = 1000;
  private uids = 0;
  private ips = 0;

  constructor(private readonly cluster: FakeCluster) {
    // As the pool controller's index once its informers have listed.
    this.index.markSynced();
  }

  /** Options of warm Pods (the operator's defaults of the tests). */
  podOptions(podOptions: PoolPodOptions['podOptions']): PoolPodOptions {
    return { podOptions, bindKeyHex: this.signer.publicKeyHex };
  }

  /** Adds a pool. */
  putPool(
    name: string,
    spec: SandboxPoolSpec = {},
    namespace = 'team-a',
    createdAt = '2030-01-01T00:00:00Z',
  ): PoolView {
    const view: PoolView = {
      metadata: {
        name,
        namespace,
        uid: `pool-uid-${name}`,
        resourceVersion: String(++this.rv),
        generation: 1,
        createdAt,
      },
      spec: { replicas: 1, namespaceDefault: false, template: {}, ...spec },
    };
    this.index.applyPool(view, 'added');
    return view;
  }

  /** Adds a warm Pod of the pool, Ready unless told otherwise, with the current template hash. */
  putWarm(
    pool: PoolView,
    name: string,
    opts: PoolPodOptions,
    ready = true,
    ip = `198.18.1.${++this.ips}`,
  ): PoolPodView {
    const view: PoolPodView = {
      metadata: {
        name,
        namespace: pool.metadata.namespace,
        uid: `pod-${name}`,
        resourceVersion: String(++this.rv),
        controller: {
          apiVersion: 'sandbox.dev/v1alpha1',
          kind: 'SandboxPool',
          name: pool.metadata.name,
          uid: pool.metadata.uid,
        },
      },
      pool: pool.metadata.name,
      templateHash: templateHash(pool, opts),
      phase: ready ? 'Running' : 'Pending',
      podIP: ready ? ip : undefined,
      conditions: ready
        ? [
            { type: 'PodScheduled', status: 'True' },
            { type: 'Ready', status: 'True' },
          ]
        : [],
      containers: [{ name: 'sandbox', ready, restartCount: 0 }],
    };
    this.store(view);
    return view;
  }

  /** The claimer over this world. */
  claims(opts: PoolPodOptions, hold?: RefillHold, now?: () => number): PoolClaims {
    return new PoolClaims({
      index: this.index,
      writer: this.writer(),
      bind: this.bindClient(),
      signer: this.signer,
      hashOf: (pool) => templateHash(pool, opts),
      metrics: this.metrics,
      logger: this.logger,
      wake: (ns, pool) => this.woken.push(`${ns}/${pool}`),
      hold,
      now,
    });
  }

  /** The writer. */
  writer(): PoolWriter {
    return {
      createPod: async (namespace, body: V1Pod) => {
        const name = body.metadata?.name ?? `unnamed-${++this.names}`;
        if (this.index.pod(namespace, name)) throw new AlreadyExistsError(`Pod ${name} already exists`);
        const raw = {
          ...body,
          metadata: { ...body.metadata, namespace, uid: `pod-${name}`, resourceVersion: String(++this.rv) },
        };
        const view = projectPoolPod(JSON.parse(JSON.stringify(raw)));
        if (!view) throw new Error('incomplete pod');
        this.ops.push(`createPod ${name}`);
        this.store(view);
        return view;
      },
      claimPod: async (pod, session: SessionRef): Promise<ClaimOutcome> => {
        // The API server's answer, held while a test looks at what happened before it.
        if (this.claimAnswer) await this.claimAnswer;
        const current = this.index.pod(pod.metadata.namespace, pod.metadata.name);
        if (!current) return 'gone';
        if (
          this.conflictOnClaim.delete(pod.metadata.name) ||
          current.metadata.resourceVersion !== pod.metadata.resourceVersion
        ) {
          this.ops.push(`claimPod ${pod.metadata.name} conflict`);
          return 'conflict';
        }
        const claimed: PoolPodView = {
          ...current,
          metadata: {
            ...current.metadata,
            resourceVersion: String(++this.rv),
            sessionLabel: session.name,
            controller: {
              apiVersion: 'sandbox.dev/v1alpha1',
              kind: 'SandboxSession',
              name: session.name,
              uid: session.uid,
            },
          },
        };
        this.ops.push(`claimPod ${pod.metadata.name} -> ${session.name}`);
        this.store(claimed);
        return claimed;
      },
      deletePod: async (pod, exact): Promise<WriteOutcome> => {
        const current = this.index.pod(pod.metadata.namespace, pod.metadata.name);
        if (!current || current.metadata.uid !== pod.metadata.uid) return 'gone';
        if (exact && current.metadata.resourceVersion !== pod.metadata.resourceVersion) return 'gone';
        this.ops.push(`deletePod ${pod.metadata.name}${exact ? ' exact' : ''}`);
        this.index.applyPod(current, 'deleted');
        this.cluster.collect('pod', current.metadata.namespace, current.metadata.name);
        return 'done';
      },
      patchStatus: async (pool, status) => {
        this.ops.push(`patchStatus ${pool.metadata.name}`);
        this.statuses.push({ pool: pool.metadata.name, status });
        this.index.applyPool({ ...pool, status }, 'updated');
      },
    };
  }

  /** A bind client that behaves like the warm agents (by Pod IP: each Pod has its own). */
  bindClient(): BindClient {
    const key = bindVerifyKey(this.signer.publicKeyHex);
    return {
      bind: async (podIP, body: BindRequest): Promise<BindOutcome> => {
        const pod = this.podByIP(podIP);
        if (!pod) return 'failed';
        this.ops.push(`bind ${pod.metadata.name}`);
        this.onBind?.(pod.metadata.name);
        const behaviour = this.behaviour.get(pod.metadata.name) ?? 'agent';
        if (behaviour === 'silent') return 'failed';
        if (behaviour === 'refuse' || this.bound.has(pod.metadata.name)) return 'refused';
        if (!verifyBindSignature(key, body)) return 'refused';
        const payload = JSON.parse(body.payload) as BindPayload;
        if (payload.pod.uid !== pod.metadata.uid || payload.pod.name !== pod.metadata.name) return 'refused';
        this.bound.set(pod.metadata.name, payload);
        return 'bound';
      },
      status: async (podIP, token) => {
        const pod = this.podByIP(podIP);
        if (!pod) return 'failed';
        this.ops.push(`bindStatus ${pod.metadata.name}`);
        const accepted = this.bound.get(pod.metadata.name);
        if (!accepted || accepted.token !== token) return 'refused';
        return { bound: true, session: accepted.session };
      },
    };
  }

  private podByIP(ip: string): PoolPodView | undefined {
    for (const name of this.podNames()) {
      const pod = this.index.pod('team-a', name) ?? this.index.pod('team-b', name);
      if (pod?.podIP === ip) return pod;
    }
    return undefined;
  }

  private readonly known = new Set<string>();

  private podNames(): string[] {
    return [...this.known];
  }

  /** Stores a Pod in the index and in the cluster's Pod store. */
  store(view: PoolPodView): void {
    this.known.add(view.metadata.name);
    this.index.applyPod(view, 'updated');
    this.cluster.putPod(view);
  }

  /** A unique UID (tests). */
  uid(): string {
    return `u-${++this.uids}`;
  }
}
