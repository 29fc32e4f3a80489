/**
 * The operator's in-memory index of pools and pool Pods, fed by the pool informers (and by the
 * operator's own writes, so that a Pod it just created or claimed counts at once, before the watch
 * shows it). Keyed for the three questions asked on the hot path: the warm Pods of a pool, the
 * pool Pod bound to a session, and the namespace's default pool.
 *
 * The informers see every Pod labelled sandbox.dev/pool in the watched namespaces, and anyone who
 * may create Pods in one of them sets that label and any ownerReference they like. So both Pod
 * questions are answered by the exact ownership test (crds/src/ownership.ts; ADR 0027): a Pod is
 * a warm Pod of a pool, or bound to a session, only when it is in the owner's namespace and its
 * controller reference names the owner's served apiVersion, kind, name and UID. A Pod planted in
 * another namespace naming a session's UID is indexed under its own namespace, where no such
 * session is, and is never `boundTo` that session (issue 25).
 */
import {
  KIND,
  controlledByPool,
  controlledBySession,
  isPlatformRef,
  type OwnerIdentity,
} from '@sandbox-platform/api';

import type { PoolPodView, PoolView } from './pool-view.js';

/** A change as the informers report it. */
export type Change = 'added' | 'updated' | 'deleted';

/** The index. */
export class PoolIndex {
  private readonly pools = new Map<string, PoolView>();
  private readonly pods = new Map<string, PoolPodView>();
  /**
   * Session identity (the Pod's own namespace, the referenced name and UID) -> keys of the pool
   * Pods whose controller reference names it under a served apiVersion (normally one).
   */
  private readonly bySession = new Map<string, Set<string>>();
  private listed = false;

  /**
   * True once the informers have listed (pool-controller.ts): before that, no pool and no bound
   * Pod in the index proves nothing (a Pod claimed before a restart is simply not seen yet).
   */
  get synced(): boolean {
    return this.listed;
  }

  /** Records that the informers have listed (or, false, that they stopped). */
  markSynced(synced = true): void {
    this.listed = synced;
  }

  /** Applies a pool change. */
  applyPool(view: PoolView, change: Change): void {
    const key = keyOf(view.metadata.namespace, view.metadata.name);
    if (change === 'deleted') this.pools.delete(key);
    else this.pools.set(key, view);
  }

  /** Applies a Pod change (from the informer, or the answer of our own create or claim). */
  applyPod(view: PoolPodView, change: Change): void {
    const key = keyOf(view.metadata.namespace, view.metadata.name);
    const previous = this.pods.get(key);
    if (previous) this.unindex(previous, key);
    if (change === 'deleted') {
      this.pods.delete(key);
      return;
    }
    if (previous && newer(previous, view)) {
      // An informer event older than what our own write answered: keep ours.
      this.index(previous, key);
      return;
    }
    this.pods.set(key, view);
    this.index(view, key);
  }

  /** A pool by namespace and name. */
  pool(namespace: string, name: string): PoolView | undefined {
    return this.pools.get(keyOf(namespace, name));
  }

  /** Every pool. */
  allPools(): PoolView[] {
    return [...this.pools.values()];
  }

  /** The pools of a namespace. */
  poolsIn(namespace: string): PoolView[] {
    return [...this.pools.values()].filter((p) => p.metadata.namespace === namespace);
  }

  /** Pods whose controller is this pool (warm: bound to nobody yet), deleting ones included. */
  warmPods(pool: PoolView): PoolPodView[] {
    return [...this.pods.values()].filter((p) =>
      controlledByPool(p.metadata.namespace, p.metadata.controller, pool.metadata),
    );
  }

  /**
   * The pool Pod whose controller is exactly this session, in its namespace (bound, or claimed and
   * not bound yet), if any. Should several claim to be (only someone who may create Pods in the
   * session's own namespace can make that happen), the one named `preferred` (status.podName)
   * wins, else the first by name.
   */
  boundTo(session: OwnerIdentity, preferred?: string): PoolPodView | undefined {
    const keys = this.bySession.get(identityKey(session.namespace, session.name, session.uid));
    if (!keys) return undefined;
    const pods = [...keys]
      .map((k) => this.pods.get(k))
      .filter((p): p is PoolPodView => p !== undefined)
      .filter((p) => controlledBySession(p.metadata.namespace, p.metadata.controller, session))
      .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
    return pods.find((p) => p.metadata.name === preferred) ?? pods[0];
  }

  /** A pool Pod by namespace and name. */
  pod(namespace: string, name: string): PoolPodView | undefined {
    return this.pods.get(keyOf(namespace, name));
  }

  private index(view: PoolPodView, key: string): void {
    const session = sessionKeyOf(view);
    if (session === undefined) return;
    const keys = this.bySession.get(session) ?? new Set<string>();
    keys.add(key);
    this.bySession.set(session, keys);
  }

  private unindex(view: PoolPodView, key: string): void {
    const session = sessionKeyOf(view);
    const keys = session === undefined ? undefined : this.bySession.get(session);
    if (session === undefined || !keys) return;
    keys.delete(key);
    if (keys.size === 0) this.bySession.delete(session);
  }
}

function keyOf(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

/**
 * The session a pool Pod's controller reference names, as an index key in the Pod's own
 * namespace; undefined unless the reference is a SandboxSession under a served apiVersion.
 */
function sessionKeyOf(view: PoolPodView): string | undefined {
  const ref = view.metadata.controller;
  if (!ref || !isPlatformRef(ref) || ref.kind !== KIND) return undefined;
  return identityKey(view.metadata.namespace, ref.name, ref.uid);
}

function identityKey(namespace: string, name: string, uid: string): string {
  return JSON.stringify([namespace, name, uid]);
}

/**
 * True when `a` is a later version of the same object than `b`. resourceVersions are opaque by
 * contract but etcd revisions in practice: compared as integers only when both are, so an
 * unexpected format just lets the informer's view win.
 */
function newer(a: PoolPodView, b: PoolPodView): boolean {
  if (a.metadata.uid !== b.metadata.uid) return false;
  const x = Number(a.metadata.resourceVersion);
  const y = Number(b.metadata.resourceVersion);
  return Number.isSafeInteger(x) && Number.isSafeInteger(y) && x > y;
}
