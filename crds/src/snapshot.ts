/**
 * The SandboxSnapshot vocabulary (docs/snapshots.md): kind, finalizer, condition types, reasons,
 * the session's WorkspaceVerified condition and the object layout in the bucket. The operator, the
 * gateway and the tests import these; nothing spells them by hand.
 */

/** Kind of the snapshot resource. */
export const SNAPSHOT_KIND = 'SandboxSnapshot';
/** Plural resource name of snapshots, as in URLs and RBAC rules. */
export const SNAPSHOT_PLURAL = 'sandboxsnapshots';

/**
 * Finalizer the operator puts on every snapshot before it writes an object: the snapshot goes
 * away only once every object under its prefix is deleted from the bucket.
 */
export const SNAPSHOT_FINALIZER = 'sandbox.dev/snapshot-objects';

/** Condition types of a SandboxSnapshot. */
export const SNAPSHOT_CONDITIONS = {
  /** True once every object and the manifest are stored and the digest is known. */
  ready: 'Ready',
} as const;

/** Stable reasons of a snapshot's Ready condition. Clients may switch on these. */
export const SNAPSHOT_REASONS = {
  /** Ready=True: the workspace is stored; status.digest, sizeBytes and files are set. */
  ready: 'SnapshotReady',
  /** Waiting for its turn (the operator copies a bounded number of workspaces at once). */
  pending: 'Pending',
  /** The workspace is being copied (streamed out of the agent, written to the bucket). */
  inProgress: 'Snapshotting',
  /** Waiting for the session to be Ready (its agent streams the workspace). */
  sessionNotReady: 'SessionNotReady',
  /** Failed: spec.sessionRef names no session of the namespace. */
  sessionNotFound: 'SessionNotFound',
  /** Failed: the session stayed not Ready (suspended, starting, failing) past the operator's wait. */
  sessionUnavailable: 'SessionUnavailable',
  /** Failed: the object store refused or did not answer; the objects written so far are deleted. */
  storeUnavailable: 'StoreUnavailable',
  /** Failed: the operator has no object store configured (chart value snapshots.enabled). */
  storageNotConfigured: 'StorageNotConfigured',
  /** Failed: the namespace holds its maximum of snapshots, or of snapshot bytes (chart values). */
  quotaExceeded: 'QuotaExceeded',
  /** Failed: the agent could not stream the workspace, or its stream was cut or malformed. */
  archiveFailed: 'ArchiveFailed',
  /** Failed: unexpected; details are in the operator log. */
  reconcileError: 'ReconcileError',
} as const;

/** A reason of {@link SNAPSHOT_REASONS}. */
export type SnapshotReason = (typeof SNAPSHOT_REASONS)[keyof typeof SNAPSHOT_REASONS];

/** Summary phases of a snapshot (printer column). */
export const SNAPSHOT_PHASES = {
  pending: 'Pending',
  inProgress: 'InProgress',
  ready: 'Ready',
  failed: 'Failed',
} as const;

/** Reasons of Events the operator records on a SandboxSnapshot. */
export const SNAPSHOT_EVENT_REASONS = {
  /** Normal: the workspace was copied (the note carries files, bytes and the digest). */
  ready: 'SnapshotReady',
  /** Warning: the snapshot failed (the note carries the Ready reason and message). */
  failed: 'SnapshotFailed',
  /** Normal: the objects of a deleted snapshot were deleted from the bucket. */
  objectsDeleted: 'ObjectsDeleted',
} as const;

/**
 * The session condition that reports whether /workspace holds what it should: the content of
 * spec.workspace.fromSnapshot (restore) or what was there at the last suspension (verified resume).
 */
export const WORKSPACE_VERIFIED = 'WorkspaceVerified';

/** Stable reasons of the session's WorkspaceVerified condition (and of Ready while it is not True). */
export const WORKSPACE_REASONS = {
  /** True: the restored workspace's digest equals the snapshot's. */
  snapshotVerified: 'SnapshotVerified',
  /** True: the resumed workspace's digest equals the one recorded at suspension. */
  resumeVerified: 'ResumeVerified',
  /** False (Ready=False): the snapshot's content is being written into /workspace. */
  restoring: 'WorkspaceRestoring',
  /** Unknown (Ready=False): a resumed workspace is being compared with its digest from the suspension. */
  verifying: 'WorkspaceVerifying',
  /** False (Ready=False): the snapshot exists but is not Ready yet; the restore waits for it. */
  snapshotNotReady: 'SnapshotNotReady',
  /** False (Ready=False): spec.workspace.fromSnapshot names no snapshot of the namespace. */
  snapshotNotFound: 'SnapshotNotFound',
  /** False (Ready=False): the snapshot failed; it can never be restored. */
  snapshotFailed: 'SnapshotFailed',
  /**
   * False (Ready=False): an object of the snapshot does not match the sha256 the manifest (or
   * the snapshot's status) records: the bucket holds other bytes. Nothing is retried.
   */
  snapshotCorrupted: 'SnapshotCorrupted',
  /**
   * False (Ready=False): the content written into /workspace does not have the snapshot's digest;
   * the agent empties the workspace again. Nothing is retried.
   */
  digestMismatch: 'DigestMismatch',
  /** False (Ready=False): the object store did not answer; retried with backoff. */
  storeUnavailable: 'StoreUnavailable',
  /** False (Ready=False): the snapshot does not fit the session's workspace size. */
  workspaceTooSmall: 'WorkspaceTooSmall',
  /** False (Ready=False): the agent failed to take the archive; retried with backoff. */
  restoreFailed: 'RestoreFailed',
  /**
   * False (the session is Ready: its data is there, and the caller decides): the resumed
   * workspace's digest differs from the one recorded at suspension.
   */
  resumeDigestMismatch: 'ResumeDigestMismatch',
  /** Unknown: the resumed workspace could not be checked (agent error); the session is Ready. */
  resumeUnverified: 'ResumeUnverified',
} as const;

/** A reason of {@link WORKSPACE_REASONS}. */
export type WorkspaceReason = (typeof WORKSPACE_REASONS)[keyof typeof WORKSPACE_REASONS];

/** Reasons of Events the operator records on a session about its workspace. */
export const WORKSPACE_EVENT_REASONS = {
  /** Normal: the snapshot was restored and verified (the note carries the digest). */
  restored: 'WorkspaceRestored',
  /** Warning: the restore failed or did not verify (the note carries the reason). */
  restoreFailed: 'WorkspaceRestoreFailed',
  /** Warning: a resumed workspace differs from the one recorded at suspension. */
  resumeMismatch: 'WorkspaceChanged',
} as const;

/**
 * Object keys of a snapshot in the bucket: everything under `snapshots/<namespace>/<uid>/`, so
 * the finalizer deletes one prefix; parts are numbered, the manifest is written last (the commit
 * point: a prefix without a manifest is an interrupted attempt).
 */
export function snapshotPrefix(namespace: string, uid: string): string {
  return `snapshots/${namespace}/${uid}/`;
}

/** Key of part `index` of a snapshot's archive (six digits: up to a million parts). */
export function snapshotPartKey(namespace: string, uid: string, index: number): string {
  return `${snapshotPrefix(namespace, uid)}part-${String(index).padStart(6, '0')}`;
}

/** Key of a snapshot's manifest. */
export function snapshotManifestKey(namespace: string, uid: string): string {
  return `${snapshotPrefix(namespace, uid)}manifest.json`;
}

/** The manifest object: how to read the archive back, and what it must hash to. */
export interface SnapshotManifest {
  /** Format version of this document. */
  readonly version: 1;
  /** The archive: a POSIX pax tar stream in the canonical order (crds/src/wire/archive.ts). */
  readonly format: 'pax-tar';
  /** Compression of the parts (none: raw tar bytes). */
  readonly compression: 'none';
  /** The workspace digest (status.digest). */
  readonly digest: string;
  readonly files: number;
  readonly directories: number;
  readonly symlinks: number;
  readonly skipped: number;
  /** Archive bytes, the sum of the parts' sizes. */
  readonly sizeBytes: number;
  /** The parts in order: key, size and sha256 (hex) of each. */
  readonly parts: ReadonlyArray<{ readonly key: string; readonly size: number; readonly sha256: string }>;
}
