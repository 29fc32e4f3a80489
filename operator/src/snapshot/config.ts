/**
 * The snapshot controller's part of the operator's environment (docs/snapshots.md): the object
 * store (endpoint, bucket, region, the directory holding the credentials Secret's files) and the
 * limits. config.ts merges SNAPSHOT_ENV_SCHEMA into its schema and calls snapshotConfig; the
 * chart maps each key from its snapshots.* values. An empty SNAPSHOT_S3_ENDPOINT turns snapshots
 * off: every SandboxSnapshot fails with StorageNotConfigured.
 */
import type { SnapshotLimits } from './snapshot-deps.js';

/** JSON schema of the snapshot keys (defaults are the documented defaults). */
export const SNAPSHOT_ENV_SCHEMA = {
  SNAPSHOT_S3_ENDPOINT: {
    type: 'string',
    default: '',
    pattern: '^(https?://[^\\s/]+)?$',
    description:
      'http(s)://host[:port] of the S3-compatible object store holding snapshots (path-style requests, ' +
      'SigV4); empty: snapshots off (they fail with StorageNotConfigured).',
  },
  SNAPSHOT_S3_BUCKET: {
    type: 'string',
    default: 'sandbox-snapshots',
    pattern: '^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$',
    description: 'Bucket of the snapshots (created at the first snapshot when it does not exist).',
  },
  SNAPSHOT_S3_REGION: {
    type: 'string',
    default: 'us-east-1',
    minLength: 1,
    maxLength: 64,
    description: 'Region of the SigV4 signature.',
  },
  SNAPSHOT_S3_CREDENTIALS_DIR: {
    type: 'string',
    default: '/var/run/sandbox-snapshots',
    minLength: 1,
    description:
      'Directory with the files access-key-id and secret-access-key (the credentials Secret, mounted ' +
      'into the operator only: sandbox Pods never get them).',
  },
  SNAPSHOT_S3_TIMEOUT_MS: {
    type: 'integer',
    minimum: 100,
    maximum: 600000,
    default: 15000,
    description: 'Longest an object store connection may stay idle in a call; then the call fails.',
  },
  SNAPSHOT_PART_MB: {
    type: 'integer',
    minimum: 1,
    maximum: 64,
    default: 8,
    description:
      'Size of one archive part (object) in MiB; a copy holds at most (in flight + 1) parts in memory.',
  },
  SNAPSHOT_PARTS_IN_FLIGHT: {
    type: 'integer',
    minimum: 1,
    maximum: 16,
    default: 2,
    description: 'Parts one copy writes to the object store at once.',
  },
  SNAPSHOT_CONCURRENCY: {
    type: 'integer',
    minimum: 1,
    maximum: 64,
    default: 2,
    description:
      'Snapshots copied at once (and, separately, restores run at once); others wait (reason Pending).',
  },
  SNAPSHOT_MAX_PER_NAMESPACE: {
    type: 'integer',
    minimum: 0,
    maximum: 100000,
    default: 20,
    description: 'Snapshots a namespace may hold (Failed ones not counted); more fail with QuotaExceeded.',
  },
  SNAPSHOT_MAX_BYTES_PER_NAMESPACE: {
    type: 'integer',
    minimum: 0,
    maximum: Number.MAX_SAFE_INTEGER,
    default: 10 * 1024 * 1024 * 1024,
    description:
      'Bytes the Ready snapshots of a namespace may hold together; a copy that would exceed it fails ' +
      'with QuotaExceeded (and its objects are deleted).',
  },
  SNAPSHOT_SESSION_WAIT_SECONDS: {
    type: 'integer',
    minimum: 1,
    maximum: 86400,
    default: 120,
    description:
      'How long a snapshot waits for its session to be Ready before it fails with SessionUnavailable.',
  },
  SNAPSHOT_AGENT_IDLE_TIMEOUT_SECONDS: {
    type: 'integer',
    minimum: 1,
    maximum: 3600,
    default: 120,
    description:
      "Longest an agent's archive stream may stall (or a digest take to answer) before the copy fails.",
  },
} as const;

/** The store's location (the credentials are read from the directory by main.ts). */
export interface SnapshotStoreConfig {
  readonly endpoint: string;
  readonly bucket: string;
  readonly region: string;
  readonly credentialsDir: string;
  readonly timeoutMs: number;
}

/** The snapshot configuration. */
export interface SnapshotConfig {
  /** Undefined: snapshots off. */
  readonly store?: SnapshotStoreConfig;
  readonly limits: SnapshotLimits;
  readonly agentIdleTimeoutMs: number;
}

type SnapshotEnv = {
  [K in keyof typeof SNAPSHOT_ENV_SCHEMA]: (typeof SNAPSHOT_ENV_SCHEMA)[K] extends { type: 'integer' }
    ? number
    : string;
};

/** The typed configuration from validated values. */
export function snapshotConfig(p: SnapshotEnv): SnapshotConfig {
  return {
    store: p.SNAPSHOT_S3_ENDPOINT
      ? {
          endpoint: p.SNAPSHOT_S3_ENDPOINT,
          bucket: p.SNAPSHOT_S3_BUCKET,
          region: p.SNAPSHOT_S3_REGION,
          credentialsDir: p.SNAPSHOT_S3_CREDENTIALS_DIR,
          timeoutMs: p.SNAPSHOT_S3_TIMEOUT_MS,
        }
      : undefined,
    limits: {
      maxPerNamespace: p.SNAPSHOT_MAX_PER_NAMESPACE,
      maxBytesPerNamespace: p.SNAPSHOT_MAX_BYTES_PER_NAMESPACE,
      partBytes: p.SNAPSHOT_PART_MB * 1024 * 1024,
      partsInFlight: p.SNAPSHOT_PARTS_IN_FLIGHT,
      concurrency: p.SNAPSHOT_CONCURRENCY,
      sessionWaitMs: p.SNAPSHOT_SESSION_WAIT_SECONDS * 1000,
    },
    agentIdleTimeoutMs: p.SNAPSHOT_AGENT_IDLE_TIMEOUT_SECONDS * 1000,
  };
}
