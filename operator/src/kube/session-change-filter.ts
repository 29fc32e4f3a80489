/**
 * Drops SandboxSession watch events that cannot change what a reconcile does. Every status write
 * of the operator comes back as a MODIFIED event; re-reconciling on it would double the API calls
 * per transition for nothing. A MODIFIED event is let through only when something the reconcile
 * reads outside status changed: the UID (re-created), the generation (spec), the activity
 * annotation, or the deletion timestamp. ADDED (including dot-i's replays on re-watch) and DELETED
 * always pass. Status edited by someone else is repaired by the periodic resync.
 */
import { ANNOTATIONS } from '@sandbox-platform/api';

/** Watch event types as the API server names them. */
export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

/** The fields of a watched session the filter reads. */
export interface SessionLike {
  readonly metadata?: {
    readonly uid?: string;
    readonly generation?: number;
    readonly annotations?: Record<string, string>;
    readonly deletionTimestamp?: unknown;
  };
}

/** Remembers one fingerprint per session key. */
export class SessionChangeFilter {
  private readonly seen = new Map<string, string>();

  /** True when the event should queue the session. */
  admit(type: WatchEventType, key: string, obj: SessionLike): boolean {
    if (type === 'DELETED') {
      this.seen.delete(key);
      return true;
    }
    const next = fingerprint(obj);
    const previous = this.seen.get(key);
    this.seen.set(key, next);
    return type === 'ADDED' || previous !== next;
  }

  /** Number of sessions remembered. */
  get size(): number {
    return this.seen.size;
  }
}

function fingerprint(obj: SessionLike): string {
  const m = obj.metadata ?? {};
  return JSON.stringify([
    m.uid ?? '',
    m.generation ?? 0,
    m.annotations?.[ANNOTATIONS.lastActivity] ?? '',
    m.deletionTimestamp ? 'deleting' : '',
  ]);
}
