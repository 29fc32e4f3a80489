/**
 * What an unbound workspace claim means for the session, as a pure function of the claim, the
 * time, whether its StorageClass exists, and the bind timeout. A claim is normally unbound for a
 * few seconds: with a WaitForFirstConsumer class (local-path, most cloud classes) it is provisioned
 * only once the Pod that uses it is scheduled, so the Pod is created while the claim is pending.
 *
 *   class named and missing          -> StorageClassNotFound (it can never be provisioned)
 *   unbound for < the bind timeout   -> WorkspacePending (shown while the Pod waits for it)
 *   unbound for >= the bind timeout  -> WorkspaceNotBound (no provisioner for the class, no default
 *                                       class, no matching volume; the message says what it knows)
 *
 * The timeout counts from the claim's creation or the session's last resume, whichever is later:
 * a claim created while the session was suspended has had no consumer until the resume.
 */
import { REASONS, workspaceClaimName } from '@sandbox-platform/api';

import type { ClaimView } from '../state/views.js';
import { parseTime } from './time.js';

/** The verdict on an unbound claim. */
export interface WorkspaceState {
  readonly reason:
    typeof REASONS.workspacePending | typeof REASONS.workspaceNotBound | typeof REASONS.storageClassNotFound;
  readonly message: string;
  /** When to look again (the moment the timeout passes, at most the wait requeue). */
  readonly requeueAfterMs?: number;
}

/** Inputs of judgeUnboundClaim. */
export interface UnboundClaimInputs {
  readonly session: string;
  readonly claim: ClaimView;
  readonly now: Date;
  readonly resumedAt?: Date;
  /** undefined: the claim names no class, or the operator cannot tell. */
  readonly classExists?: boolean;
  readonly bindTimeoutMs: number;
  readonly waitRequeueMs: number;
}

/** The verdict on a claim that is not Bound. */
export function judgeUnboundClaim(inputs: UnboundClaimInputs): WorkspaceState {
  const name = workspaceClaimName(inputs.session);
  const { claim } = inputs;
  const cls = claim.storageClassName;
  if (cls && inputs.classExists === false) {
    return {
      reason: REASONS.storageClassNotFound,
      message:
        `StorageClass ${cls} of PersistentVolumeClaim ${name} does not exist, so the workspace cannot ` +
        'be provisioned; create the StorageClass, or re-create the session with an existing class (or ' +
        'none, for the cluster default)',
      requeueAfterMs: inputs.waitRequeueMs,
    };
  }
  const created = parseTime(claim.createdAt) ?? inputs.now;
  const since = inputs.resumedAt && inputs.resumedAt > created ? inputs.resumedAt : created;
  const left = since.getTime() + inputs.bindTimeoutMs - inputs.now.getTime();
  const what = cls ? `StorageClass ${cls}` : 'no StorageClass (none named, and no default StorageClass)';
  const phase = claim.phase ?? 'Pending';
  if (left <= 0) {
    return {
      reason: REASONS.workspaceNotBound,
      message:
        `PersistentVolumeClaim ${name} (${what}) has been ${phase} for more than ` +
        `${Math.round(inputs.bindTimeoutMs / 1000)}s: nothing provisions or binds a volume for it ` +
        `(check the class's provisioner and the claim's events: kubectl describe pvc ${name})`,
      requeueAfterMs: inputs.waitRequeueMs,
    };
  }
  return {
    reason: REASONS.workspacePending,
    message: `Waiting for PersistentVolumeClaim ${name} (${what}) to be bound`,
    requeueAfterMs: Math.min(left, inputs.waitRequeueMs),
  };
}
