/**
 * The Pod identity check (issue 25): the gateway dials a session's Pod only when it can tie that
 * Pod to the session. The address a session's status names is written by whoever may write
 * `sandboxsessions/status`, not necessarily the operator: a forged `status.podIP` once sent one
 * tenant's port route to another tenant's Pod. So before any connection (exec, stream, files,
 * processes, terminal, ports, MCP tools: they all resolve their target through the exec service)
 * the Pod named in `status.podName` must, in the gateway's own Pod cache:
 *   - exist in the session's namespace (the cache is per namespace; lookups never cross it),
 *   - be controlled by the session: the exact controller reference (crds/src/ownership.ts),
 *   - be Ready and not being deleted,
 *   - not use the host's network (its IP would be the node's),
 *   - have `status.podIP` among its own addresses.
 * Otherwise the session is pending with reason PodIdentityUnverified; a call that waited for it in
 * vain gets 503 `pod-identity-unverified` with Retry-After, and nothing is dialed. While the Pod
 * cache has not listed, nothing can be verified. Pure functions over the caches (map lookups only):
 * no API call per exec (ADR 0027).
 */
import { controlledBySession, type SandboxSession } from '@sandbox-platform/api';

import type { AddressPolicy } from './address.js';
import { sessionState, type ExecTarget, type SessionState } from './model.js';
import type { PodRecord } from './pod-record.js';
import type { SessionStore } from './store.js';

/** Reason of a session whose Pod could not be tied to it (pending; the API's `reason`). */
export const POD_IDENTITY_REASON = 'PodIdentityUnverified';

/** The Pod cache as the check reads it. */
export interface PodLookup {
  /** True once every served namespace's Pod cache has listed (or when Pods are not watched). */
  podsSynced(): boolean;
  /** The cached projection of the sandbox Pod `name` in `namespace`. */
  pod(namespace: string, name: string): PodRecord | undefined;
}

/** How sessions are turned into dial targets (from the configuration). */
export interface DialPolicy {
  /** Which addresses may be dialed at all (sessions/address.ts). */
  address: AddressPolicy;
  /**
   * GATEWAY_POD_IDENTITY_CHECK: true in every deployment. False only for the benchmark's
   * comparison and to show the security tests failing without the check.
   */
  podIdentityCheck: boolean;
}

/** Why a Pod was not tied to its session. */
export type IdentityFailure =
  | 'cache-not-synced'
  | 'no-pod-name'
  | 'pod-not-found'
  | 'not-controlled-by-session'
  | 'pod-not-ready'
  | 'pod-terminating'
  | 'host-network'
  | 'pod-ip-mismatch';

/** The sentence a caller reads for each failure (it names nothing outside the session's namespace). */
export const IDENTITY_MESSAGES: Readonly<Record<IdentityFailure, string>> = {
  'cache-not-synced': 'the gateway has not listed the sandbox Pods yet',
  'no-pod-name': 'the session status names no Pod',
  'pod-not-found': "the Pod named in the session status is not one of the gateway's sandbox Pods",
  'not-controlled-by-session': 'the Pod named in the session status is not controlled by the session',
  'pod-not-ready': 'the Pod named in the session status is not Ready',
  'pod-terminating': 'the Pod named in the session status is being deleted',
  'host-network': "the Pod named in the session status uses the node's network",
  'pod-ip-mismatch': 'the pod IP in the session status is not the IP of the Pod it names',
};

/** Undefined when the target's Pod is the session's own; else why not. */
export function checkPodIdentity(target: ExecTarget, pods: PodLookup): IdentityFailure | undefined {
  if (!pods.podsSynced()) return 'cache-not-synced';
  if (!target.podName) return 'no-pod-name';
  const pod = pods.pod(target.namespace, target.podName);
  if (!pod || pod.metadata.namespace !== target.namespace) return 'pod-not-found';
  // The target is the owner's identity (namespace, name, uid): no copy on the hot path.
  if (!controlledBySession(pod.metadata.namespace, pod.controller, target))
    return 'not-controlled-by-session';
  if (pod.deleting) return 'pod-terminating';
  if (!pod.ready) return 'pod-not-ready';
  if (pod.hostNetwork) return 'host-network';
  return pod.podIPs.includes(target.podIP) ? undefined : 'pod-ip-mismatch';
}

/**
 * The session's state for dialing: sessionState (model.ts), and a Ready session whose Pod fails
 * the identity check is pending with reason PodIdentityUnverified instead.
 */
export function dialState(s: SandboxSession, pods: PodLookup, policy: DialPolicy): SessionState {
  const state = sessionState(s, policy.address);
  if (state.kind !== 'ready' || !policy.podIdentityCheck) return state;
  const failure = checkPodIdentity(state.target, pods);
  if (failure === undefined) return state;
  return { kind: 'pending', reason: POD_IDENTITY_REASON, message: IDENTITY_MESSAGES[failure] };
}

/**
 * The address lookup of the Agent transport (exec/agent/agent-transport.ts): at dial time, the session's
 * current pod IP under the same rules (the Pod may have been replaced since the target was
 * resolved; a replacement is dialed only once its identity is verified). Undefined when the
 * session is no longer that uid or not dialable: the transport then dials the address it resolved.
 */
export function dialLookup(
  store: Pick<SessionStore, 'get' | 'pod' | 'podsSynced'>,
  policy: DialPolicy,
): (t: ExecTarget) => string | undefined {
  return (t) => {
    const s = store.get(t.namespace, t.name);
    const state = s && dialState(s, store, policy);
    return state?.kind === 'ready' && state.target.uid === t.uid ? state.target.podIP : undefined;
  };
}
