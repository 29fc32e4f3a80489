/**
 * Pods this operator just deleted, seen as being deleted until the informer shows it. A delete
 * answered by the API server reaches the informer a few milliseconds to seconds later; a reconcile
 * in between (a suspension then an immediate resume: E2B's pause then connect) would otherwise
 * find the old Pod in the cache still Ready, report the session Ready on it, and lose it moments
 * later when the kubelet stops it. The counterpart of created-overlay.ts: a deleted object's cache
 * entry gets a deletionTimestamp until the informer's own view has one, or no longer has the object
 * (or another object of that name), or TTL_MS passed.
 */

/** How long a deletion stands in for the informer (bounded: a watch never lags this much). */
export const DELETED_TTL_MS = 60_000;

/** The overlay of one resource. */
export class DeletedOverlay<V extends { metadata: { uid: string; deletionTimestamp?: string } }> {
  private readonly entries = new Map<string, { uid: string; at: string; until: number }>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Records that the object of this uid was deleted by this process. */
  add(namespace: string, name: string, uid: string): void {
    const now = this.now();
    this.entries.set(`${namespace}/${name}`, {
      uid,
      at: new Date(now).toISOString(),
      until: now + DELETED_TTL_MS,
    });
  }

  /** The informer's view, marked as being deleted while it still shows the deleted object as live. */
  get(namespace: string, name: string, view: V | undefined): V | undefined {
    const key = `${namespace}/${name}`;
    const entry = this.entries.get(key);
    if (!entry) return view;
    if (
      view === undefined ||
      view.metadata.uid !== entry.uid ||
      view.metadata.deletionTimestamp !== undefined ||
      this.now() >= entry.until
    ) {
      this.entries.delete(key);
      return view;
    }
    return { ...view, metadata: { ...view.metadata, deletionTimestamp: entry.at } };
  }

  /** Objects currently overlaid (tests). */
  get size(): number {
    return this.entries.size;
  }
}
