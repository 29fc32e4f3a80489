/**
 * The API view of a SandboxSnapshot (REST and MCP) and the sessions a fork starts from one: pure
 * functions, no I/O. A forked session takes the source session's Pod-shaping and lifecycle fields
 * and spec.workspace.fromSnapshot; never its startup command (refused with fromSnapshot by the
 * CRD: it would start before the workspace is restored) nor its suspension.
 */
import {
  SNAPSHOT_CONDITIONS,
  type SandboxSession,
  type SandboxSessionSpec,
  type SandboxSnapshot,
} from '@sandbox-platform/api';

/** A snapshot as the REST API and the MCP tools return it. No object key or credential. */
export interface SnapshotView {
  name: string;
  namespace: string;
  /** The session whose workspace it copies. */
  session: string;
  ready: boolean;
  /** Pending, InProgress, Ready or Failed. */
  phase: string;
  /** Reason of the Ready condition (e.g. SnapshotReady, Snapshotting, StoreUnavailable). */
  reason: string;
  message: string;
  digest: string | undefined;
  sizeBytes: number | undefined;
  files: number | undefined;
  directories: number | undefined;
  symlinks: number | undefined;
  ttlSecondsAfterReady: number | undefined;
  createdAt: string | undefined;
  completedAt: string | undefined;
}

/** The view of a snapshot. */
export function toSnapshotView(s: SandboxSnapshot): SnapshotView {
  const cond = s.status?.conditions?.find((c) => c.type === SNAPSHOT_CONDITIONS.ready);
  const created = s.metadata.creationTimestamp;
  const st = s.status ?? {};
  return {
    name: s.metadata.name ?? '',
    namespace: s.metadata.namespace ?? '',
    session: s.spec.sessionRef.name,
    ready: cond?.status === 'True',
    phase: st.phase ?? 'Pending',
    ...conditionFields(cond),
    digest: st.digest,
    sizeBytes: st.sizeBytes,
    files: st.files,
    directories: st.directories,
    symlinks: st.symlinks,
    ttlSecondsAfterReady: s.spec.ttlSecondsAfterReady,
    createdAt: created instanceof Date ? created.toISOString() : created,
    completedAt: st.completedAt,
  };
}

function conditionFields(
  cond: { reason: string; message: string } | undefined,
): Pick<SnapshotView, 'reason' | 'message'> {
  if (!cond) return { reason: 'Pending', message: 'the operator has not reported on this snapshot yet' };
  return { reason: cond.reason, message: cond.message };
}

/** The snapshot object a create sends. */
export function buildSnapshot(
  namespace: string,
  name: string,
  session: string,
  ttlSecondsAfterReady?: number,
): SandboxSnapshot {
  return {
    metadata: { name, namespace },
    spec: {
      sessionRef: { name: session },
      ...(ttlSecondsAfterReady === undefined ? {} : { ttlSecondsAfterReady }),
    },
  };
}

/** The spec of a session forked from `source` through `snapshot`. */
export function forkedSpec(source: SandboxSession, snapshot: string): SandboxSessionSpec {
  const { startup: _startup, suspend: _suspend, workspace, ...rest } = source.spec;
  const { fromSnapshot: _from, ...keptWorkspace } = workspace ?? {};
  return { ...rest, workspace: { ...keptWorkspace, fromSnapshot: { name: snapshot } } };
}
