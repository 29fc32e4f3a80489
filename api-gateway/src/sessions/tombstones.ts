/**
 * Sessions this replica saw deleted, so a caller asking for one gets 410 with the reason instead of
 * a bare 404. Bounded in count and age: an old or evicted tombstone degrades to 404, never to a
 * wrong answer.
 */
import type { Tombstone } from './store.js';

const MAX_ENTRIES = 10_000;
const MAX_AGE_MS = 60 * 60 * 1000;

/** Insertion-ordered, bounded map of tombstones keyed by namespace/name. */
export class Tombstones {
  private readonly entries = new Map<string, Tombstone>();

  constructor(private readonly now: () => number = Date.now) {}

  add(namespace: string, name: string, t: Tombstone): void {
    const key = `${namespace}/${name}`;
    this.entries.delete(key);
    this.entries.set(key, t);
    this.prune();
  }

  get(namespace: string, name: string): Tombstone | undefined {
    const t = this.entries.get(`${namespace}/${name}`);
    if (t && this.now() - t.deletedAt.getTime() > MAX_AGE_MS) return undefined;
    return t;
  }

  delete(namespace: string, name: string): void {
    this.entries.delete(`${namespace}/${name}`);
  }

  private prune(): void {
    const cutoff = this.now() - MAX_AGE_MS;
    for (const [key, t] of this.entries) {
      if (this.entries.size <= MAX_ENTRIES && t.deletedAt.getTime() >= cutoff) break;
      this.entries.delete(key);
    }
  }
}
