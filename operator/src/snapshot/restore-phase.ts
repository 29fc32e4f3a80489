/**
 * ensureRestored: the session reconcile's last provisioning phase for a session with
 * spec.workspace.fromSnapshot (docs/snapshots.md). Once the session's Pod is Ready (its agent
 * answers), the snapshot's content is written into /workspace through the agent (a background
 * restore task, restore-runner.ts) and verified against the snapshot's digest; the verdict goes
 * into scope.workspaceVerdict, and the session is Ready only once it says verified. A verified
 * restore is recorded in status.workspaceRestore with the UID of its target: an emptyDir workspace
 * is restored again into every new Pod, a persistent one once into its claim.
 *
 * Failures: a missing, failed or not yet Ready snapshot waits (woken when it changes); a corrupted
 * object, a digest mismatch or a snapshot too large for the workspace is final (Ready=False with
 * the reason, a Warning Event, nothing retried: the workspace is left empty by the agent); an
 * object store or agent that does not answer is retried.
 */
import {
  WORKSPACE_EVENT_REASONS,
  WORKSPACE_REASONS,
  SNAPSHOT_PHASES,
  type WorkspaceReason,
} from '@sandbox-platform/api';

import { podReadiness } from '../controller/pod-readiness.js';
import type { ControllerDeps, PhaseResult, Scope } from '../controller/scope.js';
import { keyString } from '../controller/session-key.js';
import { parseQuantity } from '../resources/quantity.js';
import { hasPersistentWorkspace, workspaceSize } from '../resources/workspace-claim.js';
import { AgentArchiveError } from './agent-archive.js';
import { SnapshotCorruptedError } from './copy-in.js';
import type { RestoreResult, RestoreRunner } from './restore-runner.js';
import { StoreError } from './s3-client.js';
import type { WorkspaceVerdict } from './workspace-verdict.js';

/** How soon a restore whose store or agent failed is tried again. */
const RETRY_MS = 5000;

/** Where a restore goes. */
interface Restore {
  readonly scope: Scope;
  readonly deps: ControllerDeps;
  readonly runner: RestoreRunner;
  readonly snapshot: string;
  readonly targetUID: string;
  readonly podIP: string;
}

/** The phase. */
export function ensureRestored(scope: Scope, deps: ControllerDeps): Promise<PhaseResult> {
  const from = scope.session.spec.workspace?.fromSnapshot;
  if (!from) return Promise.resolve({});
  const runner = deps.restores;
  if (!runner?.configured) {
    scope.workspaceVerdict = blocked(
      WORKSPACE_REASONS.restoreFailed,
      'The operator has no object store configured',
    );
    return Promise.resolve({});
  }
  const target = targetOf(scope);
  if (!target) return Promise.resolve({});
  const recorded = scope.session.status?.workspaceRestore;
  if (recorded?.targetUID === target.uid && recorded.snapshotName === from.name) {
    runner.forget(scope.session, target.uid);
    scope.workspaceVerdict = verified(from.name, recorded.digest ?? '');
    return Promise.resolve({});
  }
  const r: Restore = { scope, deps, runner, snapshot: from.name, targetUID: target.uid, podIP: target.podIP };
  return Promise.resolve(checkSnapshot(r) ?? runTask(r));
}

/** The Pod (Ready, with an IP) and the UID restored into: the Pod's, or the persistent claim's. */
function targetOf(scope: Scope): { uid: string; podIP: string } | undefined {
  const pod = scope.pod;
  if (!pod?.podIP || pod.metadata.deletionTimestamp || !podReadiness(pod).ready) return undefined;
  const uid = hasPersistentWorkspace(scope.session) ? scope.claim?.metadata.uid : pod.metadata.uid;
  return uid ? { uid, podIP: pod.podIP } : undefined;
}

/** A result when the snapshot cannot be restored (yet); undefined when it can. */
function checkSnapshot(r: Restore): PhaseResult | undefined {
  const { scope, deps, runner } = r;
  const { namespace } = scope.ref;
  const snap = runner.snapshot(namespace, r.snapshot);
  const wait = (reason: WorkspaceReason, message: string): PhaseResult => {
    runner.waitFor(namespace, r.snapshot, keyString(scope.key));
    scope.workspaceVerdict = blocked(reason, message);
    return { requeueAfterMs: deps.waitRequeueMs };
  };
  if (!snap || snap.metadata.deletionTimestamp)
    return wait(
      WORKSPACE_REASONS.snapshotNotFound,
      `No SandboxSnapshot ${r.snapshot} in namespace ${namespace}`,
    );
  if (snap.status?.phase === SNAPSHOT_PHASES.failed)
    return wait(
      WORKSPACE_REASONS.snapshotFailed,
      `SandboxSnapshot ${r.snapshot} failed; it cannot be restored`,
    );
  if (snap.status?.phase !== SNAPSHOT_PHASES.ready)
    return wait(WORKSPACE_REASONS.snapshotNotReady, `Waiting for SandboxSnapshot ${r.snapshot} to be Ready`);
  const size = snap.status.sizeBytes ?? 0;
  const limit = quantityBytes(workspaceSize(scope.session, deps.podOptions));
  if (limit === undefined || size <= limit) return undefined;
  scope.workspaceVerdict = blocked(
    WORKSPACE_REASONS.workspaceTooSmall,
    `SandboxSnapshot ${r.snapshot} holds ${size} bytes; the workspace allows ${limit} (spec.workspace.sizeLimit)`,
  );
  return {};
}

/** Starts the restore task, or reads its state. */
function runTask(r: Restore): PhaseResult {
  const { scope, runner } = r;
  const task = runner.state(scope.session, r.targetUID);
  const restoring = blocked(WORKSPACE_REASONS.restoring, `Restoring SandboxSnapshot ${r.snapshot}`);
  if (!task) {
    if (!runner.hasRoom) {
      scope.workspaceVerdict = blocked(WORKSPACE_REASONS.restoring, 'Waiting for a free restore slot');
      return { requeueAfterMs: 1000 };
    }
    const snap = runner.snapshot(scope.ref.namespace, r.snapshot);
    if (snap) runner.start(scope.session, r.targetUID, r.podIP, snap);
    scope.workspaceVerdict = restoring;
    return {};
  }
  if (task.state === 'running') {
    scope.workspaceVerdict = restoring;
    return {};
  }
  return task.state === 'done' ? restored(r, task.result) : restoreFailed(r, task.error);
}

function restored(r: Restore, result: RestoreResult): PhaseResult {
  const { scope, deps, runner } = r;
  const digest = result.summary.digest;
  scope.workspaceVerdict = {
    ...verified(r.snapshot, digest),
    restore: {
      snapshotName: r.snapshot,
      snapshotUID: result.snapshotUID,
      digest,
      targetUID: r.targetUID,
      completedAt: result.completedAt.toISOString(),
    },
  };
  if (runner.firstReport(scope.session, r.targetUID)) {
    const { files, directories, symlinks, contentBytes } = result.summary;
    const durationMs = Math.round(result.durationMs);
    const storeWaitMs = Math.round(result.storeWaitMs);
    deps.logger.info('workspace restored', {
      namespace: scope.ref.namespace,
      session: scope.ref.name,
      snapshot: r.snapshot,
      digest,
      contentBytes,
      durationMs,
      storeWaitMs,
    });
    deps.events.record(scope.session, {
      type: 'Normal',
      reason: WORKSPACE_EVENT_REASONS.restored,
      action: 'Restore',
      note:
        `Restored SandboxSnapshot ${r.snapshot} (${files} files, ${directories} directories, ${symlinks} symlinks, ${contentBytes} bytes) ` +
        `in ${durationMs} ms (${storeWaitMs} ms of it waiting for the object store); digest ${digest} verified`,
    });
  }
  return {};
}

function restoreFailed(r: Restore, error: unknown): PhaseResult {
  const { scope, deps, runner } = r;
  const { reason, final } = classify(error);
  const message = `Restoring SandboxSnapshot ${r.snapshot} failed: ${error instanceof Error ? error.message : String(error)}`;
  scope.workspaceVerdict = blocked(reason, message.slice(0, 4096));
  if (runner.firstReport(scope.session, r.targetUID)) {
    deps.logger.warn('workspace restore failed', {
      namespace: scope.ref.namespace,
      session: scope.ref.name,
      snapshot: r.snapshot,
      reason,
      final,
    });
    deps.events.record(scope.session, {
      type: 'Warning',
      reason: WORKSPACE_EVENT_REASONS.restoreFailed,
      action: 'Restore',
      note: `${reason}: ${message}`,
    });
  }
  if (final) return {};
  runner.forget(scope.session, r.targetUID);
  return { requeueAfterMs: RETRY_MS };
}

/** The reason of a failed restore, and whether it is final (never retried). */
export function classify(error: unknown): { reason: WorkspaceReason; final: boolean } {
  if (error instanceof SnapshotCorruptedError)
    return { reason: WORKSPACE_REASONS.snapshotCorrupted, final: true };
  if (error instanceof StoreError)
    return error.kind === 'not-found'
      ? { reason: WORKSPACE_REASONS.snapshotCorrupted, final: true }
      : { reason: WORKSPACE_REASONS.storeUnavailable, final: false };
  if (error instanceof AgentArchiveError) {
    if (error.slug === 'digest-mismatch') return { reason: WORKSPACE_REASONS.digestMismatch, final: true };
    if (error.slug === 'archive-invalid') return { reason: WORKSPACE_REASONS.snapshotCorrupted, final: true };
    if (error.slug === 'payload-too-large')
      return { reason: WORKSPACE_REASONS.workspaceTooSmall, final: true };
  }
  return { reason: WORKSPACE_REASONS.restoreFailed, final: false };
}

function blocked(reason: WorkspaceReason, message: string): WorkspaceVerdict {
  return { condition: { status: 'False', reason, message }, allowsReady: false };
}

function verified(snapshot: string, digest: string): WorkspaceVerdict {
  return {
    condition: {
      status: 'True',
      reason: WORKSPACE_REASONS.snapshotVerified,
      message: `The workspace holds SandboxSnapshot ${snapshot}: digest ${digest} verified`,
    },
    allowsReady: true,
  };
}

/** A quantity in bytes (rounded down); undefined when it does not parse. */
function quantityBytes(text: string): number | undefined {
  const q = parseQuantity(text);
  return q ? Number(q.numerator / q.denominator) : undefined;
}
