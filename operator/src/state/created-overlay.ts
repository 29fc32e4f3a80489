/**
 * Children this operator just created, remembered until the informer shows them. The informer
 * lags a create by a few milliseconds to seconds under load; a reconcile running in between (a
 * requeue, a watch event) would otherwise find no child in the cache, POST it again, get 409
 * AlreadyExists and GET it: two wasted calls per child. This is the "expectations" idea of the
 * Kubernetes controllers, reduced to what the operator needs: a create's answer stands in for the
 * cache entry for at most TTL_MS, and the informer's view wins as soon as it has one.
 */

/** How long a created object stands in for the informer (bounded: a deletion the informer
 * never showed us is noticed after this long at worst). */
export const TTL_MS = 5000;

/** The overlay of one resource. */
export class CreatedOverlay<V extends { metadata: { uid: string; resourceVersion: string } }> {
  private readonly entries = new Map<string, { view: V; until: number }>();

  constructor(private readonly now: () => number = Date.now) {}

  private identity(view: V): string {
    return `${view.metadata.uid}/${view.metadata.resourceVersion}`;
  }

  /** Records a created object. */
  add(namespace: string, name: string, view: V): void {
    this.entries.set(`${namespace}/${name}`, { view, until: this.now() + TTL_MS });
  }

  /**
   * The informer's view when it has one (the overlay entry is dropped then), else the created
   * object while it is fresh.
   */
  get(namespace: string, name: string, fromInformer: V | undefined): V | undefined {
    const key = `${namespace}/${name}`;
    const entry = this.entries.get(key);
    if (!entry) return fromInformer;
    if (fromInformer !== undefined || this.now() >= entry.until) {
      this.entries.delete(key);
      return fromInformer;
    }
    return entry.view;
  }

  /**
   * True when a watch event shows exactly the object this process created (same uid and
   * resourceVersion): the informer catching up with our own create, nothing new for the session.
   */
  isEcho(meta: { namespace: string; name: string; uid: string; resourceVersion: string }): boolean {
    const entry = this.entries.get(`${meta.namespace}/${meta.name}`);
    return entry !== undefined && this.identity(entry.view) === `${meta.uid}/${meta.resourceVersion}`;
  }

  /** Forgets an object (deleted by us). */
  forget(namespace: string, name: string): void {
    this.entries.delete(`${namespace}/${name}`);
  }

  /** Objects currently overlaid (tests). */
  get size(): number {
    return this.entries.size;
  }
}
