/**
 * The informer-backed SessionStore. Reads (get, list, readiness) come from one watch cache per
 * served namespace; writes go to the API server through the REST client (never the streaming exec
 * client). Each replica keeps its own cache; the CR is the only shared state. With the Pod identity
 * check on, it also keeps one cache of sandbox Pods per namespace (sessions/pod-informer.ts); a
 * change of a Pod wakes the calls waiting for the session that controls it.
 */
import * as k8s from '@kubernetes/client-node';
import type { SandboxSession } from '@sandbox-platform/api';
import { ANNOTATIONS, GROUP, KIND, PLURAL, VERSION } from '@sandbox-platform/api';
import type { FastifyBaseLogger } from 'fastify';

import { ProblemError } from '../errors.js';
import type { CancelSignal } from '../exec/types.js';
import type { KubeApiTracing, TraceContext, TracedApi } from '../tracing/tracing-config.js';
import { makeCoreV1Api, makeCustomObjectsApi } from './kube-api.js';
import { apiStatus, kubeFailure } from './kube-errors.js';
import { readyCondition } from './model.js';
import { NamespaceWatch, type NamespaceCache } from './informer.js';
import type { PodLookup } from './pod-identity.js';
import { NamespacePodWatch, type PodCache, type PodLister } from './pod-informer.js';
import type { PodRecord } from './pod-record.js';
import type { ActivityPatcher, CreateResult, SessionStore, Tombstone } from './store.js';
import { Tombstones } from './tombstones.js';
import { ChangeWaiters } from './waiters.js';

type Log = Pick<FastifyBaseLogger, 'info' | 'warn' | 'debug'>;

/** Options of the kube-backed store. */
export interface KubeSessionStoreOptions {
  /** KubeConfig of REST calls and watches (never shared with the streaming exec client). */
  kubeConfig: k8s.KubeConfig;
  namespaces: readonly string[];
  log: Log;
  /** Deadline of each REST call (the watches' lists included); past it: 503 kubernetes-unavailable. */
  apiTimeoutMs: number;
  /** Field manager recorded on writes. */
  fieldManager?: string;
  /** Tracing on: every REST call (not the watches) in a span (tracing/kube-spans.ts). */
  tracing?: KubeApiTracing;
  /**
   * Watch the sandbox Pods too, at most `maxPerNamespace` per namespace (the Pod identity check:
   * sessions/pod-identity.ts). Absent: no Pod is watched and podsSynced() is always true.
   */
  pods?: { maxPerNamespace: number };
}

const COLLECTED = new Set(['IdleTimeout', 'LifetimeExceeded']);
const CREATE_ATTEMPTS = 3;

/** SessionStore + ActivityPatcher on a real API server. */
export class KubeSessionStore implements SessionStore, ActivityPatcher, PodLookup {
  /** The REST client as a call under `trace` sees it (tracing on: in a span; off: the client). */
  private readonly api: TracedApi<k8s.CustomObjectsApi>;
  private readonly caches = new Map<string, NamespaceCache>();
  private readonly podCaches = new Map<string, PodCache>();
  private readonly waiters = new ChangeWaiters();
  private readonly tombstones = new Tombstones();
  private readonly fieldManager: string;

  constructor(opts: KubeSessionStoreOptions) {
    const api = makeCustomObjectsApi(opts.kubeConfig, opts.apiTimeoutMs);
    this.api = opts.tracing ? opts.tracing.traceApi(api, 'sandboxsessions') : () => api;
    this.fieldManager = opts.fieldManager ?? 'sandbox-api-gateway';
    for (const ns of opts.namespaces) {
      const events = {
        onUpsert: (s: SandboxSession): void => this.onUpsert(ns, s),
        onDelete: (s: SandboxSession): void => this.onDelete(ns, s),
      };
      this.caches.set(ns, new NamespaceWatch({ watch: opts.kubeConfig, list: api }, ns, events, opts.log));
    }
    if (opts.pods) this.watchPods(opts, opts.pods.maxPerNamespace);
  }

  private watchPods(opts: KubeSessionStoreOptions, maxPods: number): void {
    const core = makeCoreV1Api(opts.kubeConfig, opts.apiTimeoutMs);
    const list: PodLister = (namespace, labelSelector, limit, cont) =>
      core.listNamespacedPod({ namespace, labelSelector, limit, ...(cont ? { _continue: cont } : {}) });
    for (const ns of opts.namespaces) {
      const onChange = (pod: PodRecord): void => this.onPodChange(ns, pod);
      const cache = new NamespacePodWatch({ watch: opts.kubeConfig, list }, ns, {
        maxPods,
        onChange,
        log: opts.log,
      });
      this.podCaches.set(ns, cache);
    }
  }

  /** Starts every watch; resolves when each synced or handed its failure to its retry loop. */
  async start(): Promise<void> {
    await Promise.all([...this.caches.values(), ...this.podCaches.values()].map((c) => c.start()));
  }

  /** Stops the watches and releases every waiter. */
  async close(): Promise<void> {
    await Promise.all([...this.caches.values(), ...this.podCaches.values()].map((c) => c.stop()));
    this.waiters.releaseAll();
  }

  synced(): boolean {
    return [...this.caches.values()].every((c) => c.synced());
  }

  podsSynced(): boolean {
    for (const c of this.podCaches.values()) if (!c.synced()) return false;
    return true;
  }

  pod(namespace: string, name: string): PodRecord | undefined {
    return this.podCaches.get(namespace)?.get(name);
  }

  get(namespace: string, name: string): SandboxSession | undefined {
    return this.caches.get(namespace)?.get(name);
  }

  list(namespace: string): SandboxSession[] {
    return this.caches.get(namespace)?.list() ?? [];
  }

  tombstone(namespace: string, name: string): Tombstone | undefined {
    return this.tombstones.get(namespace, name);
  }

  waitForChange(namespace: string, name: string, timeoutMs: number, signal?: CancelSignal): Promise<void> {
    return this.waiters.wait(`${namespace}/${name}`, timeoutMs, signal);
  }

  async createOrGet(session: SandboxSession, trace?: TraceContext): Promise<CreateResult> {
    const { namespace, name } = session.metadata as { namespace: string; name: string };
    for (let attempt = 1; ; attempt++) {
      try {
        const created = (await this.api(trace).createNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace,
          plural: PLURAL,
          body: session,
          fieldManager: this.fieldManager,
        })) as SandboxSession;
        return { session: created, created: true };
      } catch (err) {
        if (apiStatus(err) !== 409) throw kubeFailure(err, 'create session');
      }
      const existing = await this.readFresh(namespace, name, trace);
      if (existing) return { session: existing, created: false };
      // Deleted between our create and our read: try again, a bounded number of times.
      if (attempt >= CREATE_ATTEMPTS) {
        throw new ProblemError('conflict', 'the session was being created and deleted concurrently', {
          retryAfterSeconds: 1,
        });
      }
    }
  }

  async delete(namespace: string, name: string, trace?: TraceContext): Promise<boolean> {
    try {
      await this.api(trace).deleteNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace,
        plural: PLURAL,
        name,
      });
      return true;
    } catch (err) {
      if (apiStatus(err) === 404) return false;
      throw kubeFailure(err, 'delete session');
    }
  }

  async setSuspended(
    namespace: string,
    name: string,
    suspend: boolean,
    trace?: TraceContext,
  ): Promise<SandboxSession | undefined> {
    const body = suspend
      ? { spec: { suspend } }
      : {
          spec: { suspend },
          metadata: { annotations: { [ANNOTATIONS.lastActivity]: new Date().toISOString() } },
        };
    try {
      return (await this.api(trace).patchNamespacedCustomObject(
        {
          group: GROUP,
          version: VERSION,
          namespace,
          plural: PLURAL,
          name,
          body,
          fieldManager: this.fieldManager,
        },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      )) as SandboxSession;
    } catch (err) {
      if (apiStatus(err) === 404) return undefined;
      throw kubeFailure(err, suspend ? 'suspend session' : 'resume session');
    }
  }

  async patchLastActivity(namespace: string, name: string, at: Date, trace?: TraceContext): Promise<void> {
    const body = { metadata: { annotations: { [ANNOTATIONS.lastActivity]: at.toISOString() } } };
    await this.api(trace).patchNamespacedCustomObject(
      {
        group: GROUP,
        version: VERSION,
        namespace,
        plural: PLURAL,
        name,
        body,
        fieldManager: this.fieldManager,
      },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
  }

  /** A GET straight from the API server: after a 409 or a cache miss, where the watch may lag. */
  async readFresh(
    namespace: string,
    name: string,
    trace?: TraceContext,
  ): Promise<SandboxSession | undefined> {
    try {
      return (await this.api(trace).getNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace,
        plural: PLURAL,
        name,
      })) as SandboxSession;
    } catch (err) {
      if (apiStatus(err) === 404) return undefined;
      throw kubeFailure(err, 'read session');
    }
  }

  private onUpsert(namespace: string, s: SandboxSession): void {
    const name = s.metadata.name ?? '';
    this.tombstones.delete(namespace, name);
    this.waiters.notify(`${namespace}/${name}`);
  }

  /** A Pod changed: wake the calls waiting for the session its controller reference names. */
  private onPodChange(namespace: string, pod: PodRecord): void {
    const owner = pod.controller;
    if (owner?.kind === KIND && owner.name) this.waiters.notify(`${namespace}/${owner.name}`);
  }

  private onDelete(namespace: string, s: SandboxSession): void {
    const name = s.metadata.name ?? '';
    const cond = readyCondition(s);
    const reason = cond?.status === 'False' && COLLECTED.has(cond.reason) ? cond.reason : 'Deleted';
    this.tombstones.add(namespace, name, { uid: s.metadata.uid ?? '', reason, deletedAt: new Date() });
    this.waiters.notify(`${namespace}/${name}`);
  }
}
