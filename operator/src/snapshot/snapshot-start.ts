/**
 * Starting a snapshot's copy: the checks that come first (an object store, the namespace's count
 * and byte quotas, the session and its Pod Ready and exactly the session's, a free copy slot) and
 * the copy task itself (clean the prefix, stream the agent's archive into the bucket). A failed
 * copy deletes what it wrote before it reports; failures map to stable reasons.
 */
import {
  ArchiveFormatError,
  CONDITIONS,
  SNAPSHOT_PHASES,
  SNAPSHOT_REASONS,
  deriveToken,
  snapshotPrefix,
  type SandboxSession,
} from '@sandbox-platform/api';

import { classifyChild } from '../controller/ownership.js';
import { podReadiness } from '../controller/pod-readiness.js';
import { AgentArchiveError, type AgentTarget } from './agent-archive.js';
import { ArchiveMismatchError, SnapshotTooLargeError, copyOut, type CopyOutResult } from './copy-out.js';
import { StoreError, type ObjectStore } from './s3-client.js';
import type { SnapshotView } from './snapshot-kube.js';
import { deletePrefix, logCleanupFailure, type SnapshotDeps } from './snapshot-deps.js';
import { failed, pending, type SnapshotOutcome } from './snapshot-status.js';

/** How soon to look again while waiting for the session or for a copy slot. */
const SESSION_POLL_MS = 2000;
const SLOT_POLL_MS = 1000;

/** What starting decided. */
export interface Started {
  readonly outcome: SnapshotOutcome;
  readonly requeueAfterMs?: number;
}

/** Checks the preconditions and starts the copy task when they hold. */
export async function startCopy(view: SnapshotView, key: string, deps: SnapshotDeps): Promise<Started> {
  const now = deps.now();
  const { namespace } = view.metadata;
  const store = deps.store;
  if (!store)
    return {
      outcome: failed(
        SNAPSHOT_REASONS.storageNotConfigured,
        'The operator has no object store configured (chart value snapshots.enabled and snapshots.s3.*)',
        now,
      ),
    };
  const quota = quotaProblem(view, deps);
  if (!quota.ok) return { outcome: failed(SNAPSHOT_REASONS.quotaExceeded, quota.message, now) };
  const sessionName = view.spec.sessionRef.name;
  const session = await deps.session(namespace, sessionName);
  if (!session)
    return {
      outcome: failed(
        SNAPSHOT_REASONS.sessionNotFound,
        `No SandboxSession ${sessionName} in namespace ${namespace}`,
        now,
      ),
    };
  const target = agentOf(session, deps);
  if (!target) {
    const waited = now.getTime() - Date.parse(view.metadata.createdAt ?? now.toISOString());
    if (waited > deps.limits.sessionWaitMs)
      return {
        outcome: failed(
          SNAPSHOT_REASONS.sessionUnavailable,
          `SandboxSession ${sessionName} was not Ready for ${Math.round(waited / 1000)}s; a snapshot copies the workspace of a running session`,
          now,
        ),
      };
    return {
      outcome: pending(
        SNAPSHOT_REASONS.sessionNotReady,
        `Waiting for SandboxSession ${sessionName} to be Ready`,
      ),
      requeueAfterMs: SESSION_POLL_MS,
    };
  }
  if (deps.tasks.running >= deps.limits.concurrency)
    return {
      outcome: pending(
        SNAPSHOT_REASONS.pending,
        `Waiting for one of ${deps.limits.concurrency} running copies to finish`,
      ),
      requeueAfterMs: SLOT_POLL_MS,
    };
  deps.tasks.start(key, (signal) =>
    runCopy({ view, store, target, maxBytes: quota.remaining, deps, signal }),
  );
  return {
    outcome: {
      phase: SNAPSHOT_PHASES.inProgress,
      reason: SNAPSHOT_REASONS.inProgress,
      message: `Copying the workspace of SandboxSession ${sessionName} to the object store`,
      fields: { startedAt: now.toISOString(), sessionUID: session.metadata.uid, completedAt: undefined },
    },
  };
}

/** The count and byte quotas: a message when exceeded, else the bytes still allowed. */
function quotaProblem(
  view: SnapshotView,
  deps: SnapshotDeps,
): { ok: false; message: string } | { ok: true; remaining: number } {
  const { namespace } = view.metadata;
  const { maxPerNamespace, maxBytesPerNamespace } = deps.limits;
  const live = deps.snapshots
    .inNamespace(namespace)
    .filter((s) => s.status?.phase !== SNAPSHOT_PHASES.failed && !s.metadata.deletionTimestamp)
    .sort(
      (a, b) =>
        (a.metadata.createdAt ?? '').localeCompare(b.metadata.createdAt ?? '') ||
        a.metadata.name.localeCompare(b.metadata.name),
    );
  const position = live.findIndex((s) => s.metadata.uid === view.metadata.uid);
  if (position >= maxPerNamespace)
    return {
      ok: false,
      message: `Namespace ${namespace} holds ${maxPerNamespace} snapshots, its maximum (chart value snapshots.quota.maxPerNamespace); delete one first`,
    };
  const used = live.reduce(
    (sum, s) => sum + (s.status?.phase === SNAPSHOT_PHASES.ready ? (s.status.sizeBytes ?? 0) : 0),
    0,
  );
  const remaining = maxBytesPerNamespace - used;
  if (remaining <= 0)
    return {
      ok: false,
      message: `Namespace ${namespace}'s snapshots hold ${used} bytes, its maximum is ${maxBytesPerNamespace} (chart value snapshots.quota.maxBytesPerNamespace); delete one first`,
    };
  return { ok: true, remaining };
}

/** The session's agent when the session is Ready on a Pod that is exactly its own. */
function agentOf(session: SandboxSession, deps: SnapshotDeps): AgentTarget | undefined {
  const podName = session.status?.podName;
  if (!sessionReady(session) || !podName) return undefined;
  const pod = deps.pod(session.metadata.namespace ?? '', podName);
  if (!pod?.podIP || classifyChild(pod.metadata, session) !== 'owned' || !podReadiness(pod).ready)
    return undefined;
  const { namespace = '', name = '', uid = '' } = session.metadata;
  return { podIP: pod.podIP, token: deriveToken(deps.masterKey, { namespace, name, uid }) };
}

function sessionReady(session: SandboxSession): boolean {
  const ready = session.status?.conditions?.find((c) => c.type === CONDITIONS.ready);
  return ready?.status === 'True' && session.spec.suspend !== true;
}

async function runCopy(copy: {
  readonly view: SnapshotView;
  readonly store: ObjectStore;
  readonly target: AgentTarget;
  readonly maxBytes: number;
  readonly deps: SnapshotDeps;
  readonly signal: AbortSignal;
}): Promise<CopyOutResult> {
  const { view, store, target, maxBytes, deps, signal } = copy;
  const { namespace, uid } = view.metadata;
  const prefix = snapshotPrefix(namespace, uid);
  await store.ensureBucket();
  await deletePrefix(store, prefix); // what an interrupted attempt left
  try {
    const { body, summary } = await deps.agent.archive(target);
    return await copyOut({
      body,
      summary,
      store,
      namespace,
      uid,
      partBytes: deps.limits.partBytes,
      inFlight: deps.limits.partsInFlight,
      maxBytes,
      signal,
    });
  } catch (err) {
    if (!signal.aborted)
      await deletePrefix(store, prefix).catch((e: unknown) => logCleanupFailure(deps, view, e));
    throw err;
  }
}

/** The status of a failed copy: a stable reason per kind of failure. */
export function outcomeOfFailure(err: unknown, now: Date): SnapshotOutcome {
  if (err instanceof StoreError)
    return failed(SNAPSHOT_REASONS.storeUnavailable, `The object store failed: ${err.message}`, now);
  if (err instanceof SnapshotTooLargeError) return failed(SNAPSHOT_REASONS.quotaExceeded, err.message, now);
  if (
    err instanceof AgentArchiveError ||
    err instanceof ArchiveMismatchError ||
    err instanceof ArchiveFormatError
  )
    return failed(SNAPSHOT_REASONS.archiveFailed, `The workspace could not be archived: ${err.message}`, now);
  return failed(
    SNAPSHOT_REASONS.reconcileError,
    'Copying the workspace failed; check the operator logs',
    now,
  );
}
