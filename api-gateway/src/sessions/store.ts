/**
 * The narrow interfaces the gateway's routes depend on for sessions. The real implementation is
 * informer-backed (kube-store.ts); tests use an in-memory fake.
 */
import type { SandboxSession } from '@sandbox-platform/api';

import type { CancelSignal } from '../exec/types.js';
import type { TraceContext } from '../tracing/tracing-config.js';
import type { PodLookup } from './pod-identity.js';

/** What the gateway remembers about a session it saw deleted (so callers get 410, not 404). */
export interface Tombstone {
  uid: string;
  /** Ready reason at deletion when it was IdleTimeout or LifetimeExceeded, else "Deleted". */
  reason: string;
  deletedAt: Date;
}

/** Result of create-or-get. */
export interface CreateResult {
  session: SandboxSession;
  /** True when this call created the object; false when it already existed. */
  created: boolean;
}

/**
 * Session reads (from a watch cache, never a GET per request) and writes (through the API server),
 * and the sandbox Pods' cache the Pod identity check reads (PodLookup, sessions/pod-identity.ts).
 */
export interface SessionStore extends PodLookup {
  /** True once every namespace's session cache has listed and is watching. */
  synced(): boolean;
  /** The cached session, if any. */
  get(namespace: string, name: string): SandboxSession | undefined;
  /** The cached sessions of one namespace. */
  list(namespace: string): SandboxSession[];
  /** A recently deleted session of that name, if this replica saw it go. */
  tombstone(namespace: string, name: string): Tombstone | undefined;
  /**
   * The session read straight from the API server, undefined when it does not exist. Only for a
   * cache miss: another replica (or this one, a moment ago) may have created it before this
   * replica's watch delivered it, and a caller must read its own writes.
   */
  readFresh(namespace: string, name: string, trace?: TraceContext): Promise<SandboxSession | undefined>;
  /**
   * Resolves on the next cache change of that session (or of a Pod its controller reference names),
   * or after timeoutMs, or when signal aborts.
   */
  waitForChange(namespace: string, name: string, timeoutMs: number, signal?: CancelSignal): Promise<void>;
  /**
   * Creates the object, or on AlreadyExists reads the existing one from the API server (the cache
   * may lag) and returns it with created=false. `trace` (on every API call here): the request's
   * trace context, whose span the calls' spans are children of (tracing on).
   */
  createOrGet(session: SandboxSession, trace?: TraceContext): Promise<CreateResult>;
  /** Deletes the session; false when it did not exist. */
  delete(namespace: string, name: string, trace?: TraceContext): Promise<boolean>;
  /**
   * Sets spec.suspend (ADR 0015) with one merge patch, no precondition: idempotent, so any number
   * of replicas and calls may send it at once. A resume also stamps the activity annotation, so
   * the fresh Pod is not found idle at once. The patched object, or undefined when it is gone.
   */
  setSuspended(
    namespace: string,
    name: string,
    suspend: boolean,
    trace?: TraceContext,
  ): Promise<SandboxSession | undefined>;
}

/** Writes the activity annotation (merge patch). */
export interface ActivityPatcher {
  /** `trace`: the trace context of the request that reported the activity (tracing on). */
  patchLastActivity(namespace: string, name: string, at: Date, trace?: TraceContext): Promise<void>;
}
