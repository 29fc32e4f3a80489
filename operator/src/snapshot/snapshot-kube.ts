/**
 * SandboxSnapshots as the operator sees them (a small projection, as for pools) and its writes to
 * them: the status, the finalizer (added and removed with a resourceVersion precondition, so a
 * stale view never drops someone else's finalizer) and the TTL delete (with a UID precondition).
 */
import type * as k8s from '@kubernetes/client-node';
import {
  GROUP,
  SNAPSHOT_PLURAL,
  VERSION,
  type SandboxSnapshotSpec,
  type SandboxSnapshotStatus,
} from '@sandbox-platform/api';

import type { JsonClient } from '../kube/json-client.js';

/** A SandboxSnapshot as the operator keeps it. */
export interface SnapshotView {
  readonly metadata: {
    readonly name: string;
    readonly namespace: string;
    readonly uid: string;
    readonly resourceVersion: string;
    readonly generation: number;
    readonly createdAt?: string;
    readonly deletionTimestamp?: string;
    readonly finalizers: readonly string[];
  };
  readonly spec: SandboxSnapshotSpec;
  readonly status?: SandboxSnapshotStatus;
}

/** The writes. */
export interface SnapshotWriter {
  /** Writes status onto `resourceVersion` (409 when the snapshot changed since). */
  patchStatus(view: SnapshotView, status: SandboxSnapshotStatus): Promise<void>;
  /** Sets metadata.finalizers onto the view's resourceVersion. */
  setFinalizers(view: SnapshotView, finalizers: readonly string[]): Promise<void>;
  /** Deletes the snapshot if it still has the view's UID. */
  delete(view: SnapshotView): Promise<void>;
}

type Loose = Record<string, unknown>;

/** Projects a SandboxSnapshot; undefined when it lacks its identity. Never throws. */
export function projectSnapshot(raw: unknown): SnapshotView | undefined {
  const obj = asObject(raw);
  const meta = asObject(obj.metadata);
  const name = str(meta.name);
  const namespace = str(meta.namespace);
  const uid = str(meta.uid);
  const resourceVersion = str(meta.resourceVersion);
  if (!name || !namespace || !uid || !resourceVersion) return undefined;
  return {
    metadata: {
      name,
      namespace,
      uid,
      resourceVersion,
      generation: typeof meta.generation === 'number' ? meta.generation : 0,
      createdAt: time(meta.creationTimestamp),
      deletionTimestamp: time(meta.deletionTimestamp),
      finalizers: Array.isArray(meta.finalizers)
        ? meta.finalizers.filter((f): f is string => typeof f === 'string')
        : [],
    },
    spec: plain(obj.spec) as SandboxSnapshotSpec,
    status: obj.status === undefined ? undefined : (plain(obj.status) as SandboxSnapshotStatus),
  };
}

/** The path of a snapshot (or its subresource). */
export function snapshotPath(namespace: string, name: string, sub?: 'status'): string {
  return `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/${SNAPSHOT_PLURAL}/${name}${sub ? `/${sub}` : ''}`;
}

/** The writer over the JSON client and the custom objects API. */
export function createSnapshotWriter(clients: {
  readonly json: JsonClient;
  readonly custom: k8s.CustomObjectsApi;
}): SnapshotWriter {
  return {
    patchStatus: async (view, status) => {
      const { namespace, name, resourceVersion } = view.metadata;
      await clients.json.mergePatch(snapshotPath(namespace, name, 'status'), {
        metadata: { resourceVersion },
        status,
      });
    },
    setFinalizers: async (view, finalizers) => {
      const { namespace, name, resourceVersion } = view.metadata;
      await clients.json.mergePatch(snapshotPath(namespace, name), {
        metadata: { resourceVersion, finalizers: [...finalizers] },
      });
    },
    delete: async (view) => {
      const { namespace, name, uid } = view.metadata;
      await clients.custom.deleteNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace,
        plural: SNAPSHOT_PLURAL,
        name,
        body: { preconditions: { uid } },
      });
    },
  };
}

function plain(value: unknown): unknown {
  if (value === undefined || value === null) return {};
  try {
    return JSON.parse(JSON.stringify(value)) as unknown;
  } catch {
    return {};
  }
}

function asObject(value: unknown): Loose {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Loose) : {};
}

function str(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function time(value: unknown): string | undefined {
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? undefined : value.toISOString();
  return str(value);
}
