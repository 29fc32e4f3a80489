/**
 * Reconciles one SandboxSnapshot (docs/snapshots.md). Level-triggered, like the session reconcile:
 *
 *   deleting:          delete every object under the snapshot's prefix, then drop the finalizer
 *                      (a store that does not answer keeps the snapshot, retried with backoff)
 *   no finalizer:      add it (before any object is written)
 *   Ready:             delete the snapshot at completedAt + ttlSecondsAfterReady, if set
 *   Failed:            nothing (final)
 *   otherwise:         a finished copy task's result becomes the status (Ready or Failed); a
 *                      running one is left alone; with none, the preconditions are checked
 *                      (snapshot-start.ts) and a copy task starts: clean the prefix, stream the
 *                      session's workspace into the bucket (copy-out.ts)
 *
 * A snapshot found InProgress with no task in this process (the operator restarted, or another
 * replica led) starts again from a clean prefix: it becomes Ready only with its manifest written.
 */
import {
  SNAPSHOT_EVENT_REASONS,
  SNAPSHOT_FINALIZER,
  SNAPSHOT_PHASES,
  SNAPSHOT_REASONS,
  snapshotPrefix,
  type SandboxSession,
} from '@sandbox-platform/api';

import { errorFields } from '../telemetry/logger.js';
import type { CopyOutResult } from './copy-out.js';
import { deletePrefix, type SnapshotDeps } from './snapshot-deps.js';
import type { SnapshotView } from './snapshot-kube.js';
import { outcomeOfFailure, startCopy } from './snapshot-start.js';
import { isFinal, isReady, sameStatus, snapshotStatus, type SnapshotOutcome } from './snapshot-status.js';

/** When to look again. */
export interface SnapshotResult {
  readonly requeueAfterMs?: number;
}

/** Reconciles the snapshot `namespace/name`. */
export async function reconcileSnapshot(
  namespace: string,
  name: string,
  deps: SnapshotDeps,
): Promise<SnapshotResult> {
  const key = `${namespace}/${name}`;
  const view = deps.snapshots.get(namespace, name);
  if (!view) {
    deps.tasks.cancel(key);
    return {};
  }
  if (view.metadata.deletionTimestamp) return finalize(view, key, deps);
  if (!view.metadata.finalizers.includes(SNAPSHOT_FINALIZER)) {
    await deps.writer.setFinalizers(view, [...view.metadata.finalizers, SNAPSHOT_FINALIZER]);
    return {};
  }
  if (isReady(view)) return expireIfDue(view, deps);
  if (isFinal(view)) return {};
  const task = deps.tasks.get(key);
  if (task?.state === 'running') return {};
  if (task) {
    if (task.state === 'failed')
      deps.logger.warn('snapshot copy failed', { namespace, snapshot: name, ...errorFields(task.error) });
    const outcome =
      task.state === 'done'
        ? readyOutcome(task.result, deps.now())
        : outcomeOfFailure(task.error, deps.now());
    await write(view, outcome, deps);
    deps.tasks.forget(key);
    announce(view, outcome, deps);
    return {};
  }
  const started = await startCopy(view, key, deps);
  await write(view, started.outcome, deps);
  if (started.outcome.phase === SNAPSHOT_PHASES.failed) announce(view, started.outcome, deps);
  return { requeueAfterMs: started.requeueAfterMs };
}

/** Deletes the snapshot's objects, then its finalizer. */
async function finalize(view: SnapshotView, key: string, deps: SnapshotDeps): Promise<SnapshotResult> {
  deps.tasks.cancel(key);
  if (!view.metadata.finalizers.includes(SNAPSHOT_FINALIZER)) return {};
  let deleted = 0;
  if (deps.store)
    deleted = await deletePrefix(deps.store, snapshotPrefix(view.metadata.namespace, view.metadata.uid));
  await deps.writer.setFinalizers(
    view,
    view.metadata.finalizers.filter((f) => f !== SNAPSHOT_FINALIZER),
  );
  deps.logger.info('snapshot objects deleted', {
    namespace: view.metadata.namespace,
    snapshot: view.metadata.name,
    objects: deleted,
  });
  if (deleted > 0)
    deps.events.record(asEventObject(view), {
      type: 'Normal',
      reason: SNAPSHOT_EVENT_REASONS.objectsDeleted,
      action: 'Delete',
      note: `Deleted ${deleted} objects from the snapshot store`,
    });
  return {};
}

async function expireIfDue(view: SnapshotView, deps: SnapshotDeps): Promise<SnapshotResult> {
  const ttl = view.spec.ttlSecondsAfterReady;
  const completed = Date.parse(view.status?.completedAt ?? '');
  if (ttl === undefined || Number.isNaN(completed)) return {};
  const due = completed + ttl * 1000 - deps.now().getTime();
  if (due > 0) return { requeueAfterMs: due };
  deps.logger.info('snapshot expired; deleting it', {
    namespace: view.metadata.namespace,
    snapshot: view.metadata.name,
    ttl,
  });
  await deps.writer.delete(view);
  return {};
}

function readyOutcome(result: CopyOutResult, now: Date): SnapshotOutcome {
  const m = result.manifest;
  return {
    phase: SNAPSHOT_PHASES.ready,
    reason: SNAPSHOT_REASONS.ready,
    message: `Stored ${m.files} files, ${m.directories} directories and ${m.symlinks} symlinks (${m.sizeBytes} bytes in ${result.objects} objects)`,
    fields: {
      digest: m.digest,
      manifestDigest: `sha256:${result.manifestSha256}`,
      sizeBytes: m.sizeBytes,
      files: m.files,
      directories: m.directories,
      symlinks: m.symlinks,
      skipped: m.skipped,
      objects: result.objects,
      completedAt: now.toISOString(),
    },
  };
}

async function write(view: SnapshotView, outcome: SnapshotOutcome, deps: SnapshotDeps): Promise<void> {
  const status = snapshotStatus(view, outcome, deps.now());
  if (sameStatus(view.status, status)) return;
  await deps.writer.patchStatus(view, status);
}

function announce(view: SnapshotView, outcome: SnapshotOutcome, deps: SnapshotDeps): void {
  const ok = outcome.phase === SNAPSHOT_PHASES.ready;
  const fields = { namespace: view.metadata.namespace, snapshot: view.metadata.name, reason: outcome.reason };
  if (ok) deps.logger.info('snapshot ready', { ...fields, digest: outcome.fields?.digest });
  else deps.logger.warn('snapshot failed', { ...fields, message: outcome.message });
  deps.events.record(asEventObject(view), {
    type: ok ? 'Normal' : 'Warning',
    reason: ok ? SNAPSHOT_EVENT_REASONS.ready : SNAPSHOT_EVENT_REASONS.failed,
    action: ok ? 'Snapshot' : 'Fail',
    note: ok
      ? `${outcome.message}; digest ${outcome.fields?.digest ?? ''}`
      : `${outcome.reason}: ${outcome.message}`,
  });
}

/** The snapshot as the Event recorder's object (its kind names it in `regarding`). */
function asEventObject(view: SnapshotView): SandboxSession {
  const { name, namespace, uid, resourceVersion } = view.metadata;
  return {
    kind: 'SandboxSnapshot',
    metadata: { name, namespace, uid, resourceVersion },
    spec: {},
  } as unknown as SandboxSession;
}
