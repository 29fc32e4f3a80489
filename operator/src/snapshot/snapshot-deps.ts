/**
 * What the snapshot reconcile needs from outside (the controller builds it), its tunables, and
 * the prefix clean-up both the reconcile and the copy use.
 */
import type { SandboxSession } from '@sandbox-platform/api';

import type { EventRecorder } from '../kube/ports.js';
import type { PodView } from '../state/views.js';
import type { Logger } from '../telemetry/log-port.js';
import { errorFields } from '../telemetry/logger.js';
import type { AgentArchiveClient } from './agent-archive.js';
import type { CopyOutResult } from './copy-out.js';
import type { ObjectStore } from './s3-client.js';
import type { SnapshotView, SnapshotWriter } from './snapshot-kube.js';
import type { Tasks } from './tasks.js';

/** Tunables of the snapshot controller (chart values, operator env). */
export interface SnapshotLimits {
  /** Snapshots a namespace may hold (Failed ones not counted). */
  readonly maxPerNamespace: number;
  /** Bytes a namespace's snapshots may hold together. */
  readonly maxBytesPerNamespace: number;
  /** Bytes of one archive part (object). */
  readonly partBytes: number;
  /** Parts written at once per copy. */
  readonly partsInFlight: number;
  /** Copies (snapshots and restores together are separate pools) running at once. */
  readonly concurrency: number;
  /** How long a snapshot waits for its session to be Ready before it fails. */
  readonly sessionWaitMs: number;
}

/** What the reconcile needs. */
export interface SnapshotDeps {
  readonly snapshots: {
    get(namespace: string, name: string): SnapshotView | undefined;
    inNamespace(namespace: string): SnapshotView[];
  };
  readonly writer: SnapshotWriter;
  /** The object store; undefined when none is configured (every snapshot fails). */
  readonly store?: ObjectStore;
  readonly agent: AgentArchiveClient;
  readonly session: (namespace: string, name: string) => Promise<SandboxSession | undefined>;
  readonly pod: (namespace: string, name: string) => PodView | undefined;
  readonly masterKey: Buffer;
  readonly tasks: Tasks<CopyOutResult>;
  readonly events: EventRecorder;
  readonly now: () => Date;
  readonly limits: SnapshotLimits;
  readonly logger: Logger;
}

/** Deletes every object under a prefix; the count deleted. */
export async function deletePrefix(store: ObjectStore, prefix: string): Promise<number> {
  const keys = await store.list(prefix);
  // A few at a time: a snapshot of 1 GiB is about 130 objects.
  for (let i = 0; i < keys.length; i += 8)
    await Promise.all(keys.slice(i, i + 8).map((k) => store.delete(k)));
  return keys.length;
}

/** Logs a failed clean-up without failing the caller. */
export function logCleanupFailure(
  deps: Pick<SnapshotDeps, 'logger'>,
  view: SnapshotView,
  err: unknown,
): void {
  deps.logger.warn('cleaning up the objects of a failed snapshot failed; they go when it is deleted', {
    namespace: view.metadata.namespace,
    snapshot: view.metadata.name,
    ...errorFields(err),
  });
}
