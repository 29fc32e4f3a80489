/**
 * Pure functions over SandboxSession objects: what state a session is in for the gateway, and the
 * representation returned to API callers. No I/O here.
 */
import type { SandboxSession, SandboxSessionCondition } from '@sandbox-platform/api';
import { CONDITIONS, REASONS, WORKSPACE_VERIFIED } from '@sandbox-platform/api';

import { DEFAULT_ADDRESS_POLICY, dialable, type AddressPolicy } from './address.js';

/** Exec transport of a session (the CRD default is Agent). */
export type TransportKind = 'Agent' | 'KubernetesExec';

/** Everything a transport needs to reach a Ready session; the address comes only from the CR status. */
export interface ExecTarget {
  namespace: string;
  name: string;
  uid: string;
  podName: string;
  podIP: string;
  transport: TransportKind;
  /** spec.idleTimeoutSeconds (0 = never idle-collected); bounds the activity throttle. */
  idleTimeoutSeconds: number;
}

/** The gateway's view of a session's state. */
export type SessionState =
  | { kind: 'ready'; target: ExecTarget }
  | { kind: 'pending'; reason: string; message: string }
  | { kind: 'gone'; reason: string; message: string };

/** Reasons of Ready=False that mean the session was collected and will not come back (Retain). */
const COLLECTED_REASONS: ReadonlySet<string> = new Set([REASONS.idleTimeout, REASONS.lifetimeExceeded]);

/** The Ready condition of a session, if the operator wrote one. */
export function readyCondition(s: SandboxSession): SandboxSessionCondition | undefined {
  return s.status?.conditions?.find((c) => c.type === CONDITIONS.ready);
}

/**
 * Classifies a session: ready (with its target), pending, or gone (deleting or collected). A pod
 * IP the address policy refuses leaves the session pending: it is never dialed.
 */
export function sessionState(
  s: SandboxSession,
  policy: AddressPolicy = DEFAULT_ADDRESS_POLICY,
): SessionState {
  const cond = readyCondition(s);
  if (s.metadata.deletionTimestamp) {
    return { kind: 'gone', reason: REASONS.terminating, message: 'the session is being deleted' };
  }
  if (cond?.status === 'False' && COLLECTED_REASONS.has(cond.reason)) {
    return { kind: 'gone', reason: cond.reason, message: cond.message };
  }
  const suspended = suspendedState(s, cond);
  if (suspended) return suspended;
  const podIP = readyAddress(s, cond, policy);
  if (podIP) return { kind: 'ready', target: toTarget(s, podIP) };
  return {
    kind: 'pending',
    reason: cond?.reason ?? REASONS.creating,
    message: cond?.message ?? 'the operator has not reported on this session yet',
  };
}

/**
 * Suspended (ADR 0015): pending with reason Suspended, also while the operator says Suspending
 * (the Pod is on its way out: a call resumes the session first instead of dialing it). The
 * operator's message says which, and why.
 */
function suspendedState(
  s: SandboxSession,
  cond: SandboxSessionCondition | undefined,
): SessionState | undefined {
  if (s.spec.suspend !== true) return undefined;
  const message =
    cond?.reason === REASONS.suspended || cond?.reason === REASONS.suspending
      ? cond.message
      : 'the session is being suspended; the next call resumes it';
  return { kind: 'pending', reason: REASONS.suspended, message };
}

/**
 * The pod IP of a Ready session, or undefined. Only an IP literal the policy allows is accepted:
 * the address is used to open connections, so a hostname (or anything else) is never dialed.
 */
function readyAddress(
  s: SandboxSession,
  cond: SandboxSessionCondition | undefined,
  policy: AddressPolicy,
): string | undefined {
  const podIP = s.status?.podIP;
  if (cond?.status !== 'True' || !podIP || !dialable(podIP, policy)) return undefined;
  return s.metadata.uid && s.metadata.name ? podIP : undefined;
}

function toTarget(s: SandboxSession, podIP: string): ExecTarget {
  const name = s.metadata.name!;
  return {
    namespace: s.metadata.namespace ?? '',
    name,
    uid: s.metadata.uid!,
    podName: s.status?.podName ?? '',
    podIP,
    transport: s.spec.execTransport ?? 'Agent',
    idleTimeoutSeconds: s.spec.idleTimeoutSeconds ?? 1800,
  };
}

/** A session as the REST API and the MCP tools return it. Pod IP and token are never exposed. */
export interface SessionView {
  name: string;
  namespace: string;
  uid: string;
  createdAt: string | undefined;
  ready: boolean;
  /** Reason of the Ready condition (e.g. SandboxReady, PodPending, IdleTimeout). */
  reason: string;
  message: string;
  image: string | undefined;
  execTransport: TransportKind;
  idleTimeoutSeconds: number | undefined;
  maxLifetimeSeconds: number | undefined;
  /** As the CRD spells it (Suspend needs a persistent workspace). */
  shutdownPolicy: SandboxSession['spec']['shutdownPolicy'];
  /** spec.suspend: no Pod; the next exec, file or MCP call (or resume) brings it back. */
  suspended: boolean;
  /** /workspace is a PersistentVolumeClaim (spec.workspace.persistentVolumeClaim). */
  persistentWorkspace: boolean;
  /** spec.poolRef.name: the SandboxPool the session was created from. */
  pool: string | undefined;
  lastActivityTime: string | undefined;
  expiresAt: string | undefined;
  /** spec.workspace.fromSnapshot.name: the SandboxSnapshot the workspace was restored from. */
  fromSnapshot?: string;
  /**
   * The WorkspaceVerified condition (docs/snapshots.md): a restore from a snapshot verified
   * against its digest, or a resumed workspace compared with the digest taken at suspension.
   */
  workspaceVerified?: { status: string; reason: string; message: string };
}

function iso(value: string | Date | undefined): string | undefined {
  if (value === undefined) return undefined;
  return value instanceof Date ? value.toISOString() : value;
}

/** The view's fields of suspension, persistent workspaces and pools. */
function keepingFields(s: SandboxSession): Pick<SessionView, 'suspended' | 'persistentWorkspace' | 'pool'> {
  return {
    suspended: s.spec.suspend === true,
    persistentWorkspace: s.spec.workspace?.persistentVolumeClaim !== undefined,
    pool: s.spec.poolRef?.name,
  };
}

/**
 * Builds the API representation of a session; `state` is its state as the caller judged it (the
 * services pass the dial state, so `ready` means the gateway would dial it: sessions/pod-identity.ts).
 */
export function toSessionView(s: SandboxSession, state: SessionState = sessionState(s)): SessionView {
  const reason = state.kind === 'ready' ? REASONS.ready : state.reason;
  const cond = readyCondition(s);
  return {
    name: s.metadata.name ?? '',
    namespace: s.metadata.namespace ?? '',
    uid: s.metadata.uid ?? '',
    createdAt: iso(s.metadata.creationTimestamp),
    ready: state.kind === 'ready',
    reason,
    message: state.kind === 'ready' ? (cond?.message ?? '') : state.message,
    image: s.spec.image,
    execTransport: s.spec.execTransport ?? 'Agent',
    idleTimeoutSeconds: s.spec.idleTimeoutSeconds,
    maxLifetimeSeconds: s.spec.maxLifetimeSeconds,
    shutdownPolicy: s.spec.shutdownPolicy,
    ...keepingFields(s),
    lastActivityTime: s.status?.lastActivityTime,
    expiresAt: s.status?.expiresAt,
    ...workspaceFields(s),
  };
}

/** The view's snapshot and workspace verification fields (absent when they do not apply). */
function workspaceFields(s: SandboxSession): Pick<SessionView, 'fromSnapshot' | 'workspaceVerified'> {
  const verified = s.status?.conditions?.find((c) => c.type === WORKSPACE_VERIFIED);
  return {
    ...(s.spec.workspace?.fromSnapshot ? { fromSnapshot: s.spec.workspace.fromSnapshot.name } : {}),
    ...(verified
      ? { workspaceVerified: { status: verified.status, reason: verified.reason, message: verified.message } }
      : {}),
  };
}
