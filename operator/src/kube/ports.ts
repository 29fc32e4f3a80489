/**
 * The narrow interfaces the controller depends on. kube/ implements them with client-node; unit
 * tests implement them in memory. Nothing outside kube/ and main.ts imports client-node at runtime
 * (eslint.config.js enforces it).
 */
import type { V1PersistentVolumeClaim, V1Pod, V1Secret } from '@kubernetes/client-node';
import type { SandboxSession, SandboxSessionStatus } from '@sandbox-platform/api';

import type { SessionKey } from '../controller/session-key.js';
import type { ClaimView, PodView, SecretView } from '../state/views.js';

/** A JSON merge patch of status: fields to set, and `null` for fields to remove. */
export type StatusPatch = { [K in keyof SandboxSessionStatus]?: SandboxSessionStatus[K] | null };

/** Outcome of a write against an object that may have disappeared meanwhile. */
export type WriteOutcome = 'done' | 'gone';

/** Outcome of a status write: the session's new resourceVersion, or 'gone'. */
export type StatusWrite = { readonly resourceVersion: string } | 'gone';

/**
 * SandboxSession reads and the only writes the operator makes to it: status, deletion, and
 * spec.suspend when shutdownPolicy Suspend finds the session idle (docs/adr/0015).
 */
export interface SessionStore {
  /**
   * The session from the watch-fed cache (a fresh read on a miss); undefined when it does not
   * exist. May lag the API server by a watch event: every write made from it carries its
   * resourceVersion, so a stale read can only cause a refused write (ConflictError).
   */
  get(key: SessionKey): Promise<SandboxSession | undefined>;
  /** A fresh read from the API server; undefined when the session does not exist. */
  read(key: SessionKey): Promise<SandboxSession | undefined>;
  /** Keys of every session in the watched namespaces (paged LIST per namespace). */
  listKeys(): Promise<SessionKey[]>;
  /**
   * Merge-patches status, only onto this `resourceVersion` of the object (the one the status was
   * computed from); throws ConflictError when the object changed since (a racing activity
   * annotation wins, a stale read is refused).
   */
  patchStatus(key: SessionKey, patch: StatusPatch, resourceVersion: string): Promise<StatusWrite>;
  /** Deletes the session if it still has this UID and resourceVersion; ConflictError otherwise. */
  delete(key: SessionKey, preconditions: { uid: string; resourceVersion: string }): Promise<WriteOutcome>;
  /**
   * Sets spec.suspend=true, only onto this `resourceVersion` of the object (ConflictError when it
   * changed since: a racing activity stamp wins); resolves with the updated session, or 'gone'.
   */
  suspend(key: SessionKey, resourceVersion: string): Promise<SandboxSession | 'gone'>;
}

/** Pods or Secrets of sessions: reads from the informer cache, fresh reads, create and delete. */
export interface ChildStore<View, Body> {
  /** The informer's view of the object (may lag the API server by a watch event). */
  cached(namespace: string, name: string): View | undefined;
  /** A fresh read from the API server. */
  read(namespace: string, name: string): Promise<View | undefined>;
  /**
   * Creates the object; throws AlreadyExistsError when the name is taken, QuotaRefusedError when a
   * ResourceQuota refuses it.
   */
  create(namespace: string, body: Body): Promise<View>;
  /** Deletes the object if it still has this UID (never someone else's object of the same name). */
  delete(namespace: string, name: string, uid: string): Promise<WriteOutcome>;
}

/** The Pods of sessions. */
export type PodStore = ChildStore<PodView, V1Pod>;
/** The token Secrets of sessions. */
export type SecretStore = ChildStore<SecretView, V1Secret>;
/** The workspace PersistentVolumeClaims of sessions with a persistent workspace. */
export type ClaimStore = ChildStore<ClaimView, V1PersistentVolumeClaim>;

/**
 * Whether a StorageClass exists (cluster-scoped, read with `get` on storageclasses). undefined
 * when the operator cannot tell (the read was refused or failed): the claim is then judged by
 * its bind timeout alone.
 */
export interface StorageClassLookup {
  exists(name: string): Promise<boolean | undefined>;
}

/**
 * Whether a RuntimeClass exists (node.k8s.io/v1, cluster-scoped, read with `get` on
 * runtimeclasses); rejects when the operator cannot tell (the read was refused or failed).
 */
export interface RuntimeClassLookup {
  exists(name: string): Promise<boolean>;
}

/** A Kubernetes Event about a session. */
export interface SessionEvent {
  readonly type: 'Normal' | 'Warning';
  readonly reason: string;
  /** What the operator did or observed (events.k8s.io/v1 `action`). */
  readonly action: string;
  /** Human-readable detail; never secret values. */
  readonly note: string;
}

/**
 * Records Events. Fire-and-forget: Events are informational and lossy by design in Kubernetes, so
 * a failed Event write is logged by the recorder and never fails or delays a reconcile.
 */
export interface EventRecorder {
  record(session: SandboxSession, event: SessionEvent): void;
}
