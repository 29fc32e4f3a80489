/**
 * Projections of Pods, Secrets and PersistentVolumeClaims to the views the operator caches. They
 * accept both shapes an object arrives in: plain JSON from a watch, and client-node model
 * instances (with Date fields) from a LIST. They never throw: client-node's Watch swallows exceptions thrown by its callback,
 * so a malformed object yields undefined and is skipped instead.
 */
import { ANNOTATIONS, LABELS } from '@sandbox-platform/api';

import type {
  ChildMetadata,
  ClaimView,
  ContainerView,
  ControllerRefView,
  PodConditionView,
  PodView,
  SecretView,
} from './views.js';

type Loose = Record<string, unknown>;

/** Projects a Pod; undefined when it lacks name, namespace, uid or resourceVersion. */
export function projectPod(raw: unknown): PodView | undefined {
  const obj = asObject(raw);
  const metadata = projectMetadata(obj.metadata);
  if (!metadata) return undefined;
  const spec = asObject(obj.spec);
  const status = asObject(obj.status);
  return {
    metadata,
    phase: str(status.phase),
    reason: str(status.reason),
    message: str(status.message),
    podIP: str(status.podIP),
    nodeName: str(spec.nodeName),
    conditions: asArray(status.conditions).map(projectCondition),
    containers: asArray(status.containerStatuses).map(projectContainer),
  };
}

/** Projects a Secret: identity and the session-uid annotation, never `data`. */
export function projectSecret(raw: unknown): SecretView | undefined {
  const obj = asObject(raw);
  const metadata = projectMetadata(obj.metadata);
  if (!metadata) return undefined;
  return { metadata, sessionUID: str(asObject(asObject(obj.metadata).annotations)[ANNOTATIONS.sessionUID]) };
}

/** Projects a workspace PersistentVolumeClaim: identity, phase, class and volume. */
export function projectClaim(raw: unknown): ClaimView | undefined {
  const obj = asObject(raw);
  const metadata = projectMetadata(obj.metadata);
  if (!metadata) return undefined;
  const spec = asObject(obj.spec);
  return {
    metadata,
    createdAt: time(asObject(obj.metadata).creationTimestamp),
    phase: str(asObject(obj.status).phase),
    storageClassName: str(spec.storageClassName),
    volumeName: str(spec.volumeName),
  };
}

function projectMetadata(raw: unknown): ChildMetadata | undefined {
  const m = asObject(raw);
  const name = str(m.name);
  const namespace = str(m.namespace);
  const uid = str(m.uid);
  const resourceVersion = str(m.resourceVersion);
  if (!name || !namespace || !uid || !resourceVersion) return undefined;
  return {
    name,
    namespace,
    uid,
    resourceVersion,
    deletionTimestamp: time(m.deletionTimestamp),
    sessionLabel: str(asObject(m.labels)[LABELS.session]),
    controller: controllerOf(m.ownerReferences),
  };
}

function controllerOf(raw: unknown): ControllerRefView | undefined {
  const ref = asArray(raw)
    .map(asObject)
    .find((r) => r.controller === true);
  if (!ref) return undefined;
  return {
    apiVersion: str(ref.apiVersion) ?? '',
    kind: str(ref.kind) ?? '',
    name: str(ref.name) ?? '',
    uid: str(ref.uid) ?? '',
  };
}

function projectCondition(raw: unknown): PodConditionView {
  const c = asObject(raw);
  return {
    type: str(c.type) ?? '',
    status: str(c.status) ?? '',
    reason: str(c.reason),
    message: str(c.message),
  };
}

function projectContainer(raw: unknown): ContainerView {
  const c = asObject(raw);
  const state = asObject(c.state);
  const waiting = asObject(state.waiting);
  const terminated = asObject(state.terminated);
  return {
    name: str(c.name) ?? '',
    ready: c.ready === true,
    restartCount: typeof c.restartCount === 'number' ? c.restartCount : 0,
    waitingReason: str(waiting.reason),
    waitingMessage: str(waiting.message),
    terminatedReason: str(terminated.reason),
  };
}

function asObject(value: unknown): Loose {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Loose) : {};
}

function asArray(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

function str(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function time(value: unknown): string | undefined {
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? undefined : value.toISOString();
  return str(value);
}
