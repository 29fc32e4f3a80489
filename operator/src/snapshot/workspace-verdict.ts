/**
 * The session's WorkspaceVerified condition and its workspace status fields (docs/snapshots.md),
 * as pure functions for computeStatus (controller/status.ts): what the restore and resume phases
 * found becomes the condition; a session with spec.workspace.fromSnapshot is Ready only with a
 * verdict that allows it (a verified restore into its current Pod or claim), so a reconcile that
 * did not get as far as the restore phase can never report it Ready with unverified data.
 */
import {
  WORKSPACE_REASONS,
  WORKSPACE_VERIFIED,
  type SandboxSession,
  type SandboxSessionCondition,
  type SandboxSessionStatus,
  type WorkspaceReason,
} from '@sandbox-platform/api';

/** What the workspace phases found. */
export interface WorkspaceVerdict {
  /** The condition to report; undefined: the stored one stays (a digest recorded at suspension). */
  readonly condition?: {
    readonly status: 'True' | 'False' | 'Unknown';
    readonly reason: WorkspaceReason;
    readonly message: string;
  };
  /** False: the session must not be Ready (its workspace is not the snapshot's yet). */
  readonly allowsReady: boolean;
  /** A verified restore to record in status.workspaceRestore. */
  readonly restore?: NonNullable<SandboxSessionStatus['workspaceRestore']>;
  /** A digest to record in status.workspaceDigest (taken at suspension). */
  readonly digest?: NonNullable<SandboxSessionStatus['workspaceDigest']>;
}

/** Why Ready is False because of the workspace, or undefined when the workspace allows Ready. */
export function workspaceBlocksReady(
  session: SandboxSession,
  verdict: WorkspaceVerdict | undefined,
): { reason: WorkspaceReason; message: string } | undefined {
  if (verdict && !verdict.allowsReady)
    return {
      reason: verdict.condition?.reason ?? WORKSPACE_REASONS.restoring,
      message: verdict.condition?.message ?? 'Waiting for the workspace',
    };
  if (verdict || !session.spec.workspace?.fromSnapshot) return undefined;
  return {
    reason: WORKSPACE_REASONS.restoring,
    message: `Waiting to restore SandboxSnapshot ${session.spec.workspace.fromSnapshot.name} into the workspace`,
  };
}

/** The WorkspaceVerified condition: the verdict's, else the stored one (kept while no phase looked). */
export function workspaceCondition(
  prev: SandboxSessionStatus,
  verdict: WorkspaceVerdict | undefined,
  generation: number,
  now: Date,
): SandboxSessionCondition | undefined {
  const old = prev.conditions?.find((c) => c.type === WORKSPACE_VERIFIED);
  if (!verdict?.condition) return old;
  const { status, reason, message } = verdict.condition;
  return {
    type: WORKSPACE_VERIFIED,
    status,
    observedGeneration: generation,
    lastTransitionTime: old && old.status === status ? old.lastTransitionTime : now.toISOString(),
    reason,
    message,
  };
}

/** status.workspaceRestore and status.workspaceDigest: the verdict's new records, else the stored ones. */
export function workspaceFields(
  prev: SandboxSessionStatus,
  verdict: WorkspaceVerdict | undefined,
): SandboxSessionStatus {
  const restore = verdict?.restore ?? prev.workspaceRestore;
  const digest = verdict?.digest ?? prev.workspaceDigest;
  return {
    ...(restore ? { workspaceRestore: restore } : {}),
    ...(digest ? { workspaceDigest: digest } : {}),
  };
}
