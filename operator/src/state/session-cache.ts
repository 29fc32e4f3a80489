/**
 * The watch-fed cache of SandboxSessions that serves the reconcile's re-read, instead of one GET
 * per reconcile. The reconcile stays level-triggered; the cache only changes where it reads from.
 *
 * Why a stale entry cannot corrupt anything:
 * - every status write carries the resourceVersion of the object it was computed from, so a write
 *   computed from an outdated entry is refused (409) instead of applied, and the entry is then
 *   marked unusable until the watch delivers a newer version (reads fall back to GET meanwhile);
 * - a successful status write is written through (the API server's answer), so the operator's own
 *   writes never look stale to its next reconcile, and `readyTime` stays set-once;
 * - collection always decides on a fresh GET (SessionStore.read), never on the cache;
 * - children created from a stale entry of a deleted session carry its UID in their
 *   ownerReference: the garbage collector removes them, as after a GET that raced the deletion.
 *
 * Only the watch inserts entries (its events are ordered; a GET answer could land after a DELETED
 * event and resurrect a deleted session). Updates keep the newest resourceVersion, compared as
 * numbers: Kubernetes documents resourceVersions as opaque, but etcd-backed API servers issue
 * increasing integers. Where one is not an integer, the entry is never served (GET instead).
 *
 * Entries are slim JSON strings (no managedFields, no foreign annotations): about 1 KB per
 * session, and every read returns a fresh copy the reconcile may change freely.
 */
import type { SandboxSession } from '@sandbox-platform/api';

import { keyString } from '../controller/session-key.js';

interface Entry {
  readonly json: string;
  readonly uid: string;
  readonly rv: bigint | undefined;
  /** The entry may be served only once it reached this version (set after a refused write). */
  readonly floor?: bigint;
}

/** Annotations the reconcile reads start with this prefix; the others are not kept. */
const OWN_ANNOTATION_PREFIX = 'sandbox.dev/';

/** The cache. */
export class SessionCache {
  private readonly entries = new Map<string, Entry>();

  /** A watch event (ADDED or MODIFIED): insert, or replace an older version. */
  observe(session: SandboxSession): void {
    const key = keyOf(session);
    if (!key) return;
    const current = this.entries.get(key);
    const next = entryOf(session);
    if (current && current.uid === next.uid && !newer(next.rv, current.rv)) return;
    this.entries.set(
      key,
      current?.uid === next.uid && current.floor ? { ...next, floor: current.floor } : next,
    );
  }

  /** A watch DELETED event. */
  forget(key: string): void {
    this.entries.delete(key);
  }

  /**
   * The answer of a successful write: replaces the entry if it is the same session and newer.
   * Never inserts: the session may have been deleted meanwhile, and a miss only costs a GET.
   */
  written(session: SandboxSession): void {
    const key = keyOf(session);
    const current = key ? this.entries.get(key) : undefined;
    if (!key || !current) return;
    const next = entryOf(session);
    if (next.uid === current.uid && newer(next.rv, current.rv)) this.entries.set(key, next);
  }

  /** A write computed from the entry was refused (409): serve it only once the watch brings a newer one. */
  invalidate(key: string): void {
    const current = this.entries.get(key);
    if (current?.rv !== undefined) this.entries.set(key, { ...current, floor: current.rv + 1n });
    else this.entries.delete(key);
  }

  /** A copy of the cached session, or undefined on a miss (or an entry held back). */
  get(key: string): SandboxSession | undefined {
    const entry = this.entries.get(key);
    if (!entry || entry.rv === undefined) return undefined;
    if (entry.floor !== undefined && entry.rv < entry.floor) return undefined;
    return JSON.parse(entry.json) as SandboxSession;
  }

  /**
   * After a LIST of `namespace` ('' = all) at `listVersion`: drops entries the LIST no longer
   * shows, unless the watch delivered them after the LIST's snapshot (a deletion the watch did not
   * report: dot-i re-watches without a resourceVersion).
   */
  prune(namespace: string, listed: ReadonlySet<string>, listVersion: string | undefined): number {
    const at = toVersion(listVersion);
    let dropped = 0;
    for (const [key, entry] of this.entries) {
      if (namespace && !key.startsWith(`${namespace}/`)) continue;
      if (listed.has(key)) continue;
      if (at !== undefined && entry.rv !== undefined && entry.rv > at) continue;
      this.entries.delete(key);
      dropped++;
    }
    return dropped;
  }

  /** The version of a session the cache holds (the watch's or the operator's own write), if any. */
  seen(key: string): { uid: string; rv: bigint | undefined } | undefined {
    const entry = this.entries.get(key);
    return entry && { uid: entry.uid, rv: entry.rv };
  }

  /** Number of cached sessions. */
  get size(): number {
    return this.entries.size;
  }
}

function keyOf(session: SandboxSession): string | undefined {
  const { namespace, name } = session.metadata;
  return namespace && name ? keyString({ namespace, name }) : undefined;
}

function entryOf(session: SandboxSession): Entry {
  return {
    json: JSON.stringify(slim(session)),
    uid: session.metadata.uid ?? '',
    rv: toVersion(session.metadata.resourceVersion),
  };
}

/** What the reconcile reads of a session. */
function slim(s: SandboxSession): SandboxSession {
  const m = s.metadata;
  const annotations = Object.fromEntries(
    Object.entries(m.annotations ?? {}).filter(([k]) => k.startsWith(OWN_ANNOTATION_PREFIX)),
  );
  return {
    apiVersion: s.apiVersion,
    kind: s.kind,
    metadata: {
      name: m.name,
      namespace: m.namespace,
      uid: m.uid,
      resourceVersion: m.resourceVersion,
      generation: m.generation,
      creationTimestamp: m.creationTimestamp,
      deletionTimestamp: m.deletionTimestamp,
      annotations: Object.keys(annotations).length > 0 ? annotations : undefined,
    },
    spec: s.spec,
    status: s.status,
  };
}

/** A resourceVersion as a number, or undefined where it is not an integer. */
export function toVersion(rv: string | undefined): bigint | undefined {
  return rv !== undefined && /^[0-9]{1,30}$/.test(rv) ? BigInt(rv) : undefined;
}

function newer(a: bigint | undefined, b: bigint | undefined): boolean {
  if (a === undefined) return b === undefined;
  return b === undefined || a > b;
}
