/**
 * computeStatus: the whole status of a session as a pure function of what the reconcile observed.
 * The driver writes it once per reconcile, and only when it differs from the stored status.
 * lastTransitionTime changes only when a condition's status changes; readyTime is set once.
 * Safe because the operator is the only writer of status (leader election keeps it to one process).
 */
import {
  CONDITIONS,
  PHASES,
  REASONS,
  podName,
  secretName,
  type ReadyReason,
  type SandboxSession,
  type SandboxSessionCondition,
  type SandboxSessionStatus,
} from '@sandbox-platform/api';

import type { PodView } from '../kube/views.js';
import { lastActivity, type ExpiryReason } from './lifecycle.js';
import { podCondition, podReadiness } from './pod-readiness.js';
import { formatTime, parseTime } from './time.js';

/** How the reconcile ended, as far as status is concerned. */
export type Outcome =
  | { readonly kind: 'active' }
  | { readonly kind: 'collected'; readonly reason: ExpiryReason }
  | {
      readonly kind: 'failed';
      readonly reason:
        typeof REASONS.nameConflict | typeof REASONS.quotaExceeded | typeof REASONS.reconcileError;
      readonly message: string;
    };

/** What the reconcile observed. */
export interface StatusInputs {
  readonly session: SandboxSession;
  readonly now: Date;
  /** The session's own Secret exists (and is not being deleted). */
  readonly secretReady: boolean;
  /** The session's own Pod, if it exists. */
  readonly pod?: PodView;
  /** Why a child is missing, when the reconcile is waiting for something (e.g. the previous session's Pod to go). */
  readonly waiting?: string;
  readonly outcome: Outcome;
  readonly expiresAt?: Date;
}

interface Verdict {
  readonly status: 'True' | 'False';
  readonly reason: ReadyReason;
  readonly message: string;
}

const FAILED_REASONS = new Set<string>([
  REASONS.podFailed,
  REASONS.imagePullFailed,
  REASONS.nameConflict,
  REASONS.reconcileError,
]);

/** The Ready verdict. */
export function readyVerdict(inputs: StatusInputs): Verdict {
  const { outcome, session } = inputs;
  const name = session.metadata.name ?? '';
  if (outcome.kind === 'collected')
    return { status: 'False', reason: outcome.reason, message: collectedMessage(outcome.reason, session) };
  if (outcome.kind === 'failed') return { status: 'False', reason: outcome.reason, message: outcome.message };
  if (!inputs.secretReady) {
    return {
      status: 'False',
      reason: REASONS.creating,
      message: inputs.waiting ?? `Creating Secret ${secretName(name)}`,
    };
  }
  if (!inputs.pod) {
    return {
      status: 'False',
      reason: REASONS.creating,
      message: inputs.waiting ?? `Creating Pod ${podName(name)}`,
    };
  }
  const pod = podReadiness(inputs.pod);
  return { status: pod.ready ? 'True' : 'False', reason: pod.reason, message: pod.message };
}

/** The complete status of the session. */
export function computeStatus(inputs: StatusInputs): SandboxSessionStatus {
  const { session, now, outcome } = inputs;
  const prev = session.status ?? {};
  const generation = session.metadata.generation ?? 0;
  const verdict = readyVerdict(inputs);
  const live = outcome.kind !== 'collected';
  const pod = live ? inputs.pod : undefined;
  const conditions = [condition(prev.conditions, { type: CONDITIONS.ready, ...verdict }, generation, now)];
  const scheduled = pod && mirroredPodScheduled(pod);
  if (scheduled) conditions.push(condition(prev.conditions, scheduled, generation, now));
  const activity = lastActivity(session);
  return withoutUndefined({
    observedGeneration: generation,
    conditions,
    ...(live ? childFields(session.metadata.name ?? '', pod) : {}),
    readyTime: prev.readyTime ?? (verdict.status === 'True' ? formatTime(now) : undefined),
    lastActivityTime: activity ? formatTime(activity) : undefined,
    expiresAt: inputs.expiresAt ? formatTime(inputs.expiresAt) : undefined,
    phase: phaseOf(verdict, outcome),
  });
}

/** Names of the children, and where the Pod runs (podIP only while the Pod is not going away). */
function childFields(name: string, pod: PodView | undefined): SandboxSessionStatus {
  return {
    podName: podName(name),
    secretName: secretName(name),
    podIP: pod && !pod.metadata.deletionTimestamp ? pod.podIP : undefined,
    nodeName: pod?.nodeName,
  };
}

/** The Pod's PodScheduled condition as ours; absent until the Pod has one. */
function mirroredPodScheduled(
  pod: PodView,
): Pick<SandboxSessionCondition, 'type' | 'status' | 'reason' | 'message'> | undefined {
  const c = podCondition(pod, 'PodScheduled');
  if (!c || (c.status !== 'True' && c.status !== 'False' && c.status !== 'Unknown')) return undefined;
  // metav1.Condition requires a reason; the scheduler leaves it empty on success.
  const reason = c.reason || (c.status === 'True' ? 'Scheduled' : 'Pending');
  return { type: CONDITIONS.podScheduled, status: c.status, reason, message: c.message ?? '' };
}

/** The printer-column phase, derived from the Ready verdict. */
function phaseOf(verdict: Verdict, outcome: Outcome): SandboxSessionStatus['phase'] {
  if (outcome.kind === 'collected') return PHASES.terminated;
  if (verdict.status === 'True') return PHASES.ready;
  return FAILED_REASONS.has(verdict.reason) ? PHASES.failed : PHASES.pending;
}

function collectedMessage(reason: ExpiryReason, session: SandboxSession): string {
  const what =
    reason === REASONS.idleTimeout
      ? `No activity for ${session.spec.idleTimeoutSeconds ?? ''}s`
      : `The session reached its maximum lifetime of ${session.spec.maxLifetimeSeconds ?? ''}s`;
  return `${what}; its Pod and Secret were deleted (shutdownPolicy Retain)`;
}

/** A condition whose lastTransitionTime is kept while its status does not change. */
export function condition(
  previous: readonly SandboxSessionCondition[] | undefined,
  next: Pick<SandboxSessionCondition, 'type' | 'status' | 'reason' | 'message'>,
  generation: number,
  now: Date,
): SandboxSessionCondition {
  const old = previous?.find((c) => c.type === next.type);
  const keep = old && old.status === next.status && parseTime(old.lastTransitionTime);
  return {
    type: next.type,
    status: next.status,
    observedGeneration: generation,
    lastTransitionTime: keep ? old.lastTransitionTime : formatTime(now),
    reason: next.reason,
    message: next.message,
  };
}

/** The Ready condition of a status, if it has one. */
export function readyCondition(
  status: SandboxSessionStatus | undefined,
): SandboxSessionCondition | undefined {
  return status?.conditions?.find((c) => c.type === CONDITIONS.ready);
}

/** True when the stored status records a Retain collection (the session stays collected). */
export function collectedReason(status: SandboxSessionStatus | undefined): ExpiryReason | undefined {
  const ready = readyCondition(status);
  if (ready?.status !== 'False') return undefined;
  if (ready.reason === REASONS.idleTimeout || ready.reason === REASONS.lifetimeExceeded) return ready.reason;
  return undefined;
}

function withoutUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
