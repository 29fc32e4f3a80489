/**
 * Session quotas: how many sessions one API key and one namespace may have. Counted from the
 * informer cache (no API call per create): a session counts for the namespace it is in, and for
 * the key whose id the gateway wrote into its `sandbox.dev/created-by-key` annotation; sessions
 * being deleted no longer count. Creations this replica made that its watch has not delivered
 * yet are counted too, so a burst of parallel creates through one replica cannot overshoot.
 * Across replicas the count can lag by the creates in flight on the others; the hard per-namespace
 * ceiling is the chart's ResourceQuota on `count/sandboxsessions.sandbox.dev`.
 */
import { ANNOTATIONS, type SandboxSession } from '@sandbox-platform/api';

import type { Principal } from '../auth/keys.js';
import { ProblemError } from '../errors.js';
import type { SessionStore } from './store.js';

/** Quota limits (0: no limit). */
export interface QuotaLimits {
  maxSessionsPerKey: number;
  maxSessionsPerNamespace: number;
}

/** How long a creation is counted while the watch has not delivered it. */
const RECENT_MS = 60_000;

interface Recent {
  namespace: string;
  name: string;
  keyId: string;
  at: number;
}

/** The key id a session was created with (undefined: not created through a gateway). */
export function createdBy(s: SandboxSession): string | undefined {
  return s.metadata.annotations?.[ANNOTATIONS.createdByKey];
}

/** Admission of session creations against the quotas. */
export class SessionQuota {
  /** Creations in flight or not yet in the cache, by `namespace/name`. */
  private readonly recent = new Map<string, Recent>();

  constructor(
    private readonly store: SessionStore,
    private readonly limits: QuotaLimits,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Counts the creation of `namespace/name` by `principal` against both quotas; throws 403
   * quota-exceeded naming the quota when one is used up. The returned function must be called
   * with the outcome: created (counted until the watch has it) or not (forgotten).
   */
  admit(principal: Principal, namespace: string, name: string): (created: boolean) => void {
    this.expire();
    const { maxSessionsPerKey: perKey, maxSessionsPerNamespace: perNs } = this.limits;
    if (perKey > 0) {
      const used = this.usedByKey(principal);
      if (used >= perKey) throw exceeded('sessions-per-key', `API key ${principal.keyId}`, used, perKey);
    }
    if (perNs > 0) {
      const used = this.usedInNamespace(namespace);
      if (used >= perNs) throw exceeded('sessions-per-namespace', `namespace ${namespace}`, used, perNs);
    }
    const key = `${namespace}/${name}`;
    this.recent.set(key, { namespace, name, keyId: principal.keyId, at: this.now() });
    return (created) => {
      if (!created) this.recent.delete(key);
    };
  }

  /** Sessions of the key over its namespaces. */
  private usedByKey(principal: Principal): number {
    let n = 0;
    for (const ns of principal.namespaces) {
      for (const s of this.store.list(ns)) if (live(s) && createdBy(s) === principal.keyId) n++;
    }
    for (const r of this.pending()) if (r.keyId === principal.keyId) n++;
    return n;
  }

  private usedInNamespace(namespace: string): number {
    let n = 0;
    for (const s of this.store.list(namespace)) if (live(s)) n++;
    for (const r of this.pending()) if (r.namespace === namespace) n++;
    return n;
  }

  /** Recent creations the cache does not hold yet (those it holds are counted from the cache). */
  private *pending(): Iterable<Recent> {
    for (const [key, r] of this.recent) {
      if (this.store.get(r.namespace, r.name)) this.recent.delete(key);
      else yield r;
    }
  }

  private expire(): void {
    const oldest = this.now() - RECENT_MS;
    for (const [key, r] of this.recent) if (r.at < oldest) this.recent.delete(key);
  }
}

/** A session that counts: not being deleted. */
function live(s: SandboxSession): boolean {
  return !s.metadata.deletionTimestamp;
}

function exceeded(quota: string, who: string, used: number, limit: number): ProblemError {
  return new ProblemError(
    'quota-exceeded',
    `${who} has ${used} sessions; its quota (${quota}) is ${limit}: delete a session first`,
    { extensions: { quota, limit, used } },
  );
}
