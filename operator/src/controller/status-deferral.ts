/**
 * Status writes that can wait during a burst. A session's first statuses (Ready=False with
 * Creating or PodPending) only report progress; each write costs the API server about as much as
 * creating a child (a status patch goes through validation, field management and etcd like any
 * write). While other sessions are queued or being reconciled, such a write waits (the session is
 * requeued shortly) so every session's Secret and Pod come first; a write that waited
 * MAX_DEFER_MS is made anyway, so a steady stream of work cannot starve it. Everything else is
 * written at once: becoming Ready (a gateway may be waiting for it), failures, collection.
 *
 * Pure state keyed by session; time comes in as an argument.
 */
import { REASONS, type SandboxSessionStatus } from '@sandbox-platform/api';

import { readyCondition } from './status.js';

/** Longest a progress-only status write waits for the burst to pass. */
export const MAX_DEFER_MS = 2000;
/** How soon a deferred session is looked at again. */
export const DEFER_RETRY_MS = 250;

const PROGRESS_REASONS: ReadonlySet<string> = new Set([
  REASONS.creating,
  REASONS.podPending,
  REASONS.workspacePending,
]);

/** True when a computed status only reports provisioning progress (nothing anyone waits for). */
export function isProgressOnly(computed: SandboxSessionStatus): boolean {
  const ready = readyCondition(computed);
  return ready?.status === 'False' && PROGRESS_REASONS.has(ready.reason ?? '');
}

/** Per-session deferral bookkeeping. */
export class StatusDeferral {
  private readonly since = new Map<string, number>();

  constructor(private readonly maxDeferMs = MAX_DEFER_MS) {}

  /**
   * Whether to hold back this write now. `busy`: other sessions are queued or being reconciled.
   * The first hold starts the session's clock; a write that is made clears it.
   */
  hold(key: string, nowMs: number, busy: boolean, progressOnly: boolean): boolean {
    const first = this.since.get(key);
    if (!busy || !progressOnly || (first !== undefined && nowMs - first >= this.maxDeferMs)) {
      this.since.delete(key);
      return false;
    }
    if (first === undefined) this.since.set(key, nowMs);
    return true;
  }

  /** Forgets a session (deleted, or its write was made elsewhere). */
  forget(key: string): void {
    this.since.delete(key);
  }

  /** Sessions currently held (metrics, tests). */
  get size(): number {
    return this.since.size;
  }
}
