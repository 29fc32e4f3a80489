/**
 * What the operator keeps of SandboxPools and of their Pods: small projections, as for the
 * session children (state/views.ts). A pool Pod's view adds the pool label and the template hash
 * it was built with to the PodView the session reconcile already understands.
 */
import {
  POOL_ANNOTATIONS,
  POOL_LABELS,
  type SandboxPoolSpec,
  type SandboxPoolStatus,
} from '@sandbox-platform/api';

import { projectPod } from '../state/projections.js';
import type { ChildMetadata, PodView } from '../state/views.js';

/** Metadata of a pool: a child's identity plus what the pool status and the default need. */
export interface PoolMetadata extends ChildMetadata {
  readonly generation: number;
  /** metadata.creationTimestamp (RFC 3339): the oldest default pool of a namespace wins. */
  readonly createdAt?: string;
}

/** A SandboxPool as the operator sees it. */
export interface PoolView {
  readonly metadata: PoolMetadata;
  readonly spec: SandboxPoolSpec;
  readonly status?: SandboxPoolStatus;
}

/** A Pod of a pool (warm, or bound to a session since). */
export interface PoolPodView extends PodView {
  /** The sandbox.dev/pool label: the pool the Pod was made for. */
  readonly pool?: string;
  /** The sandbox.dev/pool-template-hash annotation. */
  readonly templateHash?: string;
}

type Loose = Record<string, unknown>;

/** Projects a SandboxPool; undefined when it lacks its identity. Never throws (see state/projections.ts). */
export function projectPool(raw: unknown): PoolView | undefined {
  const obj = asObject(raw);
  const meta = asObject(obj.metadata);
  const name = str(meta.name);
  const namespace = str(meta.namespace);
  const uid = str(meta.uid);
  const resourceVersion = str(meta.resourceVersion);
  if (!name || !namespace || !uid || !resourceVersion) return undefined;
  const created = meta.creationTimestamp;
  return {
    metadata: {
      name,
      namespace,
      uid,
      resourceVersion,
      generation: typeof meta.generation === 'number' ? meta.generation : 0,
      createdAt: created instanceof Date ? created.toISOString() : str(created),
      deletionTimestamp: str(meta.deletionTimestamp) ?? dateString(meta.deletionTimestamp),
    },
    spec: plain(obj.spec) as SandboxPoolSpec,
    status: obj.status === undefined ? undefined : (plain(obj.status) as SandboxPoolStatus),
  };
}

/** Projects a Pod of a pool: the PodView plus the pool label and the template hash. */
export function projectPoolPod(raw: unknown): PoolPodView | undefined {
  const view = projectPod(raw);
  if (!view) return undefined;
  const meta = asObject(asObject(raw).metadata);
  return {
    ...view,
    pool: str(asObject(meta.labels)[POOL_LABELS.pool]),
    templateHash: str(asObject(meta.annotations)[POOL_ANNOTATIONS.templateHash]),
  };
}

/** A JSON copy (a LIST answer may hold client-node model instances; a watch, plain JSON). */
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

function dateString(value: unknown): string | undefined {
  return value instanceof Date && !Number.isNaN(value.getTime()) ? value.toISOString() : undefined;
}
