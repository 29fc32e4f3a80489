/**
 * Callers waiting for a session to change (e.g. an exec waiting for Ready). The informer's event
 * handler notifies a key; each waiter then re-reads the cache and decides whether to wait again.
 */

import type { CancelSignal } from '../exec/types.js';

/** Keyed one-shot change notifications with timeout and abort. */
export class ChangeWaiters {
  private readonly byKey = new Map<string, Set<() => void>>();

  /** Resolves on the next notify(key), after timeoutMs, or on abort (never rejects). */
  wait(key: string, timeoutMs: number, signal?: CancelSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal?.aborted || timeoutMs <= 0) {
        resolve();
        return;
      }
      const set = this.byKey.get(key) ?? new Set();
      this.byKey.set(key, set);
      const done = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        set.delete(done);
        if (set.size === 0 && this.byKey.get(key) === set) this.byKey.delete(key);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      signal?.addEventListener('abort', done, { once: true });
      set.add(done);
    });
  }

  /** Wakes every waiter of a key. */
  notify(key: string): void {
    const set = this.byKey.get(key);
    if (!set) return;
    for (const done of [...set]) done();
  }

  /** Wakes everyone (shutdown). */
  releaseAll(): void {
    for (const key of [...this.byKey.keys()]) this.notify(key);
  }

  /** Number of keys with waiters (tests, metrics). */
  get size(): number {
    return this.byKey.size;
  }
}
