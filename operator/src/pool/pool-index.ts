/**
 * The operator's in-memory index of pools and pool Pods, fed by the pool informers (and by the
 * operator's own writes, so that a Pod it just created or claimed counts at once, before the watch
 * shows it). Keyed for the three questions asked on the hot path: the warm Pods of a pool, the
 * pool Pod bound to a session, and the namespace's default pool.
 */
import { KIND, POOL_KIND } from '@sandbox-platform/api';

import type { PoolPodView, PoolView } from './pool-view.js';

/** A change as the informers report it. */
export type Change = 'added' | 'updated' | 'deleted';

/** The index. */
export class PoolIndex {
  private readonly pools = new Map<string, PoolView>();
  private readonly pods = new Map<string, PoolPodView>();
  /** Session UID -> key of the pool Pod bound to it. */
  private readonly bySession = new Map<string, string>();
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
    const { namespace, uid } = pool.metadata;
    return [...this.pods.values()].filter(
      (p) =>
        p.metadata.namespace === namespace &&
        p.metadata.controller?.kind === POOL_KIND &&
        p.metadata.controller.uid === uid,
    );
  }

  /** The pool Pod whose controller is this session, if any (bound, or claimed and not bound yet). */
  boundTo(sessionUID: string): PoolPodView | undefined {
    const key = this.bySession.get(sessionUID);
    return key === undefined ? undefined : this.pods.get(key);
  }

  /** A pool Pod by namespace and name. */
  pod(namespace: string, name: string): PoolPodView | undefined {
    return this.pods.get(keyOf(namespace, name));
  }

  private index(view: PoolPodView, key: string): void {
    const owner = view.metadata.controller;
    if (owner?.kind === KIND) this.bySession.set(owner.uid, key);
  }

  private unindex(view: PoolPodView, key: string): void {
    const owner = view.metadata.controller;
    if (owner?.kind === KIND && this.bySession.get(owner.uid) === key) this.bySession.delete(owner.uid);
  }
}

function keyOf(namespace: string, name: string): string {
  return `${namespace}/${name}`;
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
