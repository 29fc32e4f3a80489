/**
 * A snapshot's status as a pure function of its previous status and what the reconcile decided:
 * the Ready condition (lastTransitionTime kept while its status does not change), the phase and
 * the fields of the outcome. A Ready or Failed snapshot's status is final: the reconcile never
 * computes another for it (only the TTL and the deletion act on it).
 */
import {
  SNAPSHOT_CONDITIONS,
  SNAPSHOT_PHASES,
  SNAPSHOT_REASONS,
  type SandboxSnapshotStatus,
  type SnapshotReason,
} from '@sandbox-platform/api';

import type { SnapshotView } from './snapshot-kube.js';

/** What the reconcile decided. */
export interface SnapshotOutcome {
  readonly phase: (typeof SNAPSHOT_PHASES)[keyof typeof SNAPSHOT_PHASES];
  readonly reason: SnapshotReason;
  readonly message: string;
  /** Fields to set (the stored ones are kept otherwise, except the result fields while not Ready). */
  readonly fields?: Partial<SandboxSnapshotStatus>;
}

/** Fields that describe a stored copy: only a Ready snapshot has them. */
const RESULT_FIELDS = [
  'digest',
  'manifestDigest',
  'sizeBytes',
  'files',
  'directories',
  'symlinks',
  'skipped',
  'objects',
] as const;

/** The whole status for an outcome. */
export function snapshotStatus(
  view: SnapshotView,
  outcome: SnapshotOutcome,
  now: Date,
): SandboxSnapshotStatus {
  const prev = view.status ?? {};
  const old = prev.conditions?.find((c) => c.type === SNAPSHOT_CONDITIONS.ready);
  const status = outcome.phase === SNAPSHOT_PHASES.ready ? 'True' : 'False';
  const generation = view.metadata.generation;
  const next: SandboxSnapshotStatus = {
    ...prev,
    ...outcome.fields,
    observedGeneration: generation,
    phase: outcome.phase,
    conditions: [
      {
        type: SNAPSHOT_CONDITIONS.ready,
        status,
        observedGeneration: generation,
        lastTransitionTime: old && old.status === status ? old.lastTransitionTime : now.toISOString(),
        reason: outcome.reason,
        message: outcome.message.slice(0, 32768),
      },
    ],
  };
  if (outcome.phase !== SNAPSHOT_PHASES.ready) for (const f of RESULT_FIELDS) delete next[f];
  return next;
}

/** True when the stored status is final (Ready or Failed). */
export function isFinal(view: SnapshotView): boolean {
  const phase = view.status?.phase;
  return phase === SNAPSHOT_PHASES.ready || phase === SNAPSHOT_PHASES.failed;
}

/** True when the stored status says Ready. */
export function isReady(view: SnapshotView): boolean {
  return view.status?.phase === SNAPSHOT_PHASES.ready;
}

/** The stored Ready condition's reason and message. */
export function readyOf(view: SnapshotView): { reason?: string; message?: string } {
  const c = view.status?.conditions?.find((x) => x.type === SNAPSHOT_CONDITIONS.ready);
  return { reason: c?.reason, message: c?.message };
}

/** Equal statuses (apart from key order) need no write. */
export function sameStatus(a: SandboxSnapshotStatus | undefined, b: SandboxSnapshotStatus): boolean {
  return JSON.stringify(sorted(a ?? {})) === JSON.stringify(sorted(b));
}

function sorted(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sorted);
  if (value && typeof value === 'object')
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>)
        .filter(([, v]) => v !== undefined)
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([k, v]) => [k, sorted(v)]),
    );
  return value;
}

/** A failure outcome. */
export function failed(reason: SnapshotReason, message: string, now: Date): SnapshotOutcome {
  return { phase: SNAPSHOT_PHASES.failed, reason, message, fields: { completedAt: now.toISOString() } };
}

/** A waiting outcome (Pending). */
export function pending(reason: SnapshotReason, message: string): SnapshotOutcome {
  return { phase: SNAPSHOT_PHASES.pending, reason, message };
}

export { SNAPSHOT_REASONS };
