/**
 * Drops SandboxSession watch events that cannot change what a reconcile does. Every status write
 * of the operator comes back as a MODIFIED event; re-reconciling on it would double the API calls
 * per transition for nothing. A MODIFIED event is let through only when something the reconcile
 * reads outside status changed: the UID (re-created), the generation (spec), the activity
 * annotation, or the deletion timestamp. ADDED (including dot-i's replays on re-watch) and DELETED
 * always pass. Status edited by someone else is repaired by the periodic resync.
 *
 * A passing ADDED event is a replay, queued in the queue's low lane (state/work-queue.ts), when it
 * brings nothing new: the session is known with the same fingerprint (a re-watch replays every
 * session), or it is not known yet but settled (Ready for its current generation: a new leader's
 * first watch replays every session). New sessions and real changes go first.
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
  readonly status?: {
    readonly conditions?: ReadonlyArray<{
      readonly type?: string;
      readonly status?: string;
      readonly observedGeneration?: number;
    }>;
  };
}

/** How urgently an admitted event's session is queued. */
export type QueuePriority = 'normal' | 'low';

/** Remembers one fingerprint per session key. */
export class SessionChangeFilter {
  private readonly seen = new Map<string, string>();

  /** True when the event should queue the session. */
  admit(type: WatchEventType, key: string, obj: SessionLike): boolean {
    return this.classify(type, key, obj) !== undefined;
  }

  /** The lane the event queues the session in, or undefined when it queues nothing. */
  classify(type: WatchEventType, key: string, obj: SessionLike): QueuePriority | undefined {
    if (type === 'DELETED') {
      this.seen.delete(key);
      return 'normal';
    }
    const next = fingerprint(obj);
    const previous = this.seen.get(key);
    this.seen.set(key, next);
    if (type === 'ADDED')
      return previous === next || (previous === undefined && settled(obj)) ? 'low' : 'normal';
    return previous !== next ? 'normal' : undefined;
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

/** Ready for the generation it has: nothing a reconcile needs to do soon. */
function settled(obj: SessionLike): boolean {
  const ready = obj.status?.conditions?.find((c) => c.type === 'Ready');
  return (
    ready?.status === 'True' &&
    ready.observedGeneration === (obj.metadata?.generation ?? 0) &&
    !obj.metadata?.deletionTimestamp
  );
}
