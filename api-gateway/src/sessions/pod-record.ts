/**
 * What the gateway keeps of a sandbox Pod: the few fields the Pod identity check reads
 * (sessions/pod-identity.ts), projected from a watch event or a LIST item before anything is
 * cached, so whole Pods (their specs, annotations and managed fields, up to the API server's
 * object size) never accumulate in memory. The projection never throws: client-node's Watch
 * swallows an exception thrown by its callback, so a malformed object yields undefined and is
 * skipped. Objects arrive in two shapes (plain JSON from a watch, client-node model instances from
 * a LIST, with Date fields); both are read the same way.
 */
import type { ControllerRefLike } from '@sandbox-platform/api';

/** The projection of one Pod (the `metadata` fields are those client-node's ListWatch needs). */
export interface PodRecord {
  readonly metadata: {
    readonly name: string;
    readonly namespace: string;
    readonly uid: string;
    readonly resourceVersion: string;
  };
  /** The ownerReference with `controller: true`, if any. */
  readonly controller: ControllerRefLike | undefined;
  /** status.podIP and every status.podIPs[].ip (dual stack), without duplicates. */
  readonly podIPs: readonly string[];
  /** The Pod's Ready condition is True. */
  readonly ready: boolean;
  /** metadata.deletionTimestamp is set. */
  readonly deleting: boolean;
  /** spec.hostNetwork: the Pod's IP is its node's. */
  readonly hostNetwork: boolean;
}

type Loose = Record<string, unknown>;

/** Most addresses kept per Pod (a Pod has one per IP family; the rest is hostile input). */
const MAX_POD_IPS = 4;
/** Longest string kept of any field (names are at most 253, UIDs 36, IPs 45 characters). */
const MAX_FIELD_CHARS = 256;

/** Projects a Pod; undefined when it lacks a name, namespace, uid or resourceVersion. */
export function projectPodRecord(raw: unknown): PodRecord | undefined {
  const obj = asObject(raw);
  const m = asObject(obj.metadata);
  const name = str(m.name);
  const namespace = str(m.namespace);
  const uid = str(m.uid);
  const resourceVersion = str(m.resourceVersion);
  if (!name || !namespace || !uid || !resourceVersion) return undefined;
  const status = asObject(obj.status);
  return {
    metadata: { name, namespace, uid, resourceVersion },
    controller: controllerOf(m.ownerReferences),
    podIPs: podIPsOf(status),
    ready: asArray(status.conditions)
      .map(asObject)
      .some((c) => c.type === 'Ready' && c.status === 'True'),
    deleting: m.deletionTimestamp !== undefined && m.deletionTimestamp !== null,
    hostNetwork: asObject(obj.spec).hostNetwork === true,
  };
}

function podIPsOf(status: Loose): string[] {
  const ips = new Set<string>();
  const first = str(status.podIP);
  if (first) ips.add(first);
  for (const entry of asArray(status.podIPs)) {
    if (ips.size >= MAX_POD_IPS) break;
    const ip = str(asObject(entry).ip);
    if (ip) ips.add(ip);
  }
  return [...ips];
}

function controllerOf(raw: unknown): ControllerRefLike | undefined {
  const ref = asArray(raw)
    .map(asObject)
    .find((r) => r.controller === true);
  if (!ref) return undefined;
  const out: { apiVersion?: string; kind?: string; name?: string; uid?: string } = {};
  for (const key of ['apiVersion', 'kind', 'name', 'uid'] as const) {
    const value = str(ref[key]);
    if (value !== undefined) out[key] = value;
  }
  return out;
}

function asObject(value: unknown): Loose {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Loose) : {};
}

function asArray(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

function str(value: unknown): string | undefined {
  return typeof value === 'string' && value.length > 0 && value.length <= MAX_FIELD_CHARS ? value : undefined;
}
