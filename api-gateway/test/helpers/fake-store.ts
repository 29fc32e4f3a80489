/** An in-memory SessionStore with the informer's change notifications, for route tests. */
import type { SandboxSession } from '@sandbox-platform/api';

import type { PodRecord } from '../../src/sessions/pod-record.js';
import type { CreateResult, SessionStore, Tombstone } from '../../src/sessions/store.js';
import { ChangeWaiters } from '../../src/sessions/waiters.js';
import { podOf } from './sessions.js';

/** Fake store: tests put sessions in, routes read them; every write is recorded. */
export class FakeStore implements SessionStore {
  readonly sessions = new Map<string, SandboxSession>();
  readonly tombstones = new Map<string, Tombstone>();
  readonly calls: string[] = [];
  isSynced = true;
  /** When set, createOrGet fails with it. */
  createError: Error | undefined;
  /**
   * Sessions on the "API server" that this replica's watch has not delivered yet (another replica
   * created them, or the watch lags): readFresh finds them, get does not. With `watchLags`,
   * createOrGet puts new sessions here instead of in the cache.
   */
  readonly notWatched = new Map<string, SandboxSession>();
  watchLags = false;
  /** The Pod cache: Pods put by tests, by namespace/name. */
  readonly pods = new Map<string, PodRecord>();
  podsAreSynced = true;
  /**
   * True (the default): a Ready session whose status names a Pod that `pods` does not hold has that
   * Pod as the operator would have made it (podOf: controlled by the session, Ready, with the
   * status's IP), so route tests need not put Pods. Tests of the Pod identity check set it false
   * and put (or forge) Pods themselves.
   */
  autoPods = true;
  private readonly waiters = new ChangeWaiters();
  private uidCounter = 0;

  /** Adds or replaces a session (as a watch event would) and wakes waiters. */
  put(s: SandboxSession): void {
    const key = `${s.metadata.namespace}/${s.metadata.name}`;
    this.sessions.set(key, structuredClone(s));
    this.tombstones.delete(key);
    this.waiters.notify(key);
  }

  /** Removes a session (as a DELETED watch event would) leaving a tombstone. */
  remove(namespace: string, name: string, reason = 'Deleted'): void {
    const key = `${namespace}/${name}`;
    const s = this.sessions.get(key);
    this.sessions.delete(key);
    this.tombstones.set(key, { uid: s?.metadata.uid ?? '', reason, deletedAt: new Date() });
    this.waiters.notify(key);
  }

  synced(): boolean {
    return this.isSynced;
  }

  podsSynced(): boolean {
    return this.podsAreSynced;
  }

  pod(namespace: string, name: string): PodRecord | undefined {
    const put = this.pods.get(`${namespace}/${name}`);
    if (put || !this.autoPods) return put;
    const owner = this.list(namespace).find((s) => s.status?.podName === name);
    return owner && podOf(owner);
  }

  /** Adds or replaces a Pod (as the Pod watch would) and wakes the waiters of the session it names. */
  putPod(pod: PodRecord): void {
    this.pods.set(`${pod.metadata.namespace}/${pod.metadata.name}`, pod);
    if (pod.controller?.name) this.waiters.notify(`${pod.metadata.namespace}/${pod.controller.name}`);
  }

  get(namespace: string, name: string): SandboxSession | undefined {
    return this.sessions.get(`${namespace}/${name}`);
  }

  list(namespace: string): SandboxSession[] {
    return [...this.sessions.values()].filter((s) => s.metadata.namespace === namespace);
  }

  tombstone(namespace: string, name: string): Tombstone | undefined {
    return this.tombstones.get(`${namespace}/${name}`);
  }

  readFresh(namespace: string, name: string): Promise<SandboxSession | undefined> {
    this.calls.push(`read ${namespace}/${name}`);
    const key = `${namespace}/${name}`;
    const s = this.sessions.get(key) ?? this.notWatched.get(key);
    return Promise.resolve(s && structuredClone(s));
  }

  /** Delivers a lagging session to the cache (the watch event arrives). */
  deliver(namespace: string, name: string): void {
    const key = `${namespace}/${name}`;
    const s = this.notWatched.get(key);
    if (!s) throw new Error(`no lagging session ${key}`);
    this.notWatched.delete(key);
    this.put(s);
  }

  waitForChange(namespace: string, name: string, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    return this.waiters.wait(`${namespace}/${name}`, timeoutMs, signal);
  }

  createOrGet(s: SandboxSession): Promise<CreateResult> {
    this.calls.push(`create ${s.metadata.namespace}/${s.metadata.name}`);
    if (this.createError) return Promise.reject(this.createError);
    const existing =
      this.get(s.metadata.namespace!, s.metadata.name!) ??
      this.notWatched.get(`${s.metadata.namespace}/${s.metadata.name}`);
    if (existing) return Promise.resolve({ session: structuredClone(existing), created: false });
    const created = structuredClone(s);
    created.metadata.uid = `uid-${++this.uidCounter}`;
    created.metadata.creationTimestamp = '2030-01-01T00:00:00Z';
    if (this.watchLags) this.notWatched.set(`${s.metadata.namespace}/${s.metadata.name}`, created);
    else this.put(created);
    return Promise.resolve({ session: structuredClone(created), created: true });
  }

  setSuspended(namespace: string, name: string, suspend: boolean): Promise<SandboxSession | undefined> {
    this.calls.push(`${suspend ? 'suspend' : 'resume'} ${namespace}/${name}`);
    const s = this.get(namespace, name);
    if (!s) return Promise.resolve(undefined);
    const next = structuredClone(s);
    next.spec.suspend = suspend;
    this.put(next);
    return Promise.resolve(structuredClone(next));
  }

  delete(namespace: string, name: string): Promise<boolean> {
    this.calls.push(`delete ${namespace}/${name}`);
    if (!this.get(namespace, name)) return Promise.resolve(false);
    this.remove(namespace, name);
    return Promise.resolve(true);
  }
}
