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
  workspaceClaimName,
  type ReadyReason,
  type SandboxSession,
  type SandboxSessionCondition,
  type SandboxSessionStatus,
  type WorkspaceReason,
} from '@sandbox-platform/api';

import type { ClaimView, PodView } from '../state/views.js';
import type { EnvProblem } from './env-sources.js';
import { lastActivity, type ExpiryReason } from './lifecycle.js';
import { podCondition, podReadiness } from './pod-readiness.js';
import { isSuspendReason, isSuspended, type PodLeaving, type SuspendCause } from './suspension.js';
import { formatTime, parseTime } from './time.js';
import type { WorkspaceState } from './workspace-state.js';
import {
  workspaceBlocksReady,
  workspaceCondition,
  workspaceFields,
  type WorkspaceVerdict,
} from '../snapshot/workspace-verdict.js';

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
  /** The session keeps /workspace on a PersistentVolumeClaim. */
  readonly persistent?: boolean;
  /** The session's own workspace claim, if it exists (persistent workspaces). */
  readonly claim?: ClaimView;
  /** What is wrong with the claim while it is unbound (workspace-state.ts). */
  readonly workspace?: WorkspaceState;
  /** When the session was last resumed (suspension.ts). */
  readonly resumeTime?: Date;
  /** Set when this reconcile suspended the session itself. */
  readonly suspendCause?: SuspendCause;
  /** Why a suspended session's Pod is still there (Ready says Suspending until it is gone). */
  readonly podLeaving?: PodLeaving;
  /** The session's own Pod, if it exists. */
  readonly pod?: PodView;
  /** Why a child is missing, when the reconcile is waiting for something (e.g. the previous session's Pod to go). */
  readonly waiting?: string;
  /** Why spec.env cannot be resolved (a Secret or key missing, a value that cannot be exported). */
  readonly envProblem?: EnvProblem;
  readonly outcome: Outcome;
  readonly expiresAt?: Date;
  /** What the restore (or resume) phase found about /workspace; gates Ready for fromSnapshot. */
  readonly workspaceVerdict?: WorkspaceVerdict;
}

interface Verdict {
  readonly status: 'True' | 'False';
  readonly reason: ReadyReason | WorkspaceReason;
  readonly message: string;
}

const FAILED_REASONS = new Set<string>([
  REASONS.podFailed,
  REASONS.imagePullFailed,
  REASONS.nameConflict,
  REASONS.reconcileError,
  REASONS.storageClassNotFound,
]);

/** The Ready verdict. */
export function readyVerdict(inputs: StatusInputs): Verdict {
  const { outcome, session } = inputs;
  if (outcome.kind === 'collected')
    return { status: 'False', reason: outcome.reason, message: collectedMessage(outcome.reason, session) };
  if (outcome.kind === 'failed') return { status: 'False', reason: outcome.reason, message: outcome.message };
  if (isSuspended(session)) {
    const reason = inputs.podLeaving ? REASONS.suspending : REASONS.suspended;
    return { status: 'False', reason, message: suspendedMessage(inputs) };
  }
  return missingChild(inputs) ?? podVerdict(inputs);
}

/**
 * Creating while the Secret, the workspace claim or the Pod is missing; a claim that cannot bind;
 * an env whose Secret is missing (nothing is created then).
 */
function missingChild(inputs: StatusInputs): Verdict | undefined {
  const name = inputs.session.metadata.name ?? '';
  if (inputs.envProblem) return { status: 'False', ...inputs.envProblem };
  const creating = (what: string): Verdict => ({
    status: 'False',
    reason: REASONS.creating,
    message: inputs.waiting ?? `Creating ${what}`,
  });
  if (!inputs.secretReady) return creating(`Secret ${secretName(name)}`);
  if (inputs.persistent && !inputs.claim)
    return creating(`PersistentVolumeClaim ${workspaceClaimName(name)}`);
  const workspace = inputs.workspace;
  if (workspace && workspace.reason !== REASONS.workspacePending)
    return { status: 'False', reason: workspace.reason, message: workspace.message };
  if (!inputs.pod) return creating(`Pod ${podName(name)}`);
  return undefined;
}

/** The Pod's verdict; a Pod that waits for its pending claim says so (it is unschedulable until then). */
function podVerdict(inputs: StatusInputs): Verdict {
  if (!inputs.pod) throw new Error('podVerdict without a Pod');
  const pod = podReadiness(inputs.pod);
  const workspace = inputs.workspace;
  if (!pod.ready && workspace && !inputs.pod.metadata.deletionTimestamp)
    return { status: 'False', reason: workspace.reason, message: workspace.message };
  // A workspace restored from a snapshot must be verified first (docs/snapshots.md).
  const workspaceNotReady = pod.ready
    ? workspaceBlocksReady(inputs.session, inputs.workspaceVerdict)
    : undefined;
  if (workspaceNotReady) return { status: 'False', ...workspaceNotReady };
  return { status: pod.ready ? 'True' : 'False', reason: pod.reason, message: pod.message };
}

/** How the message of an idle suspension starts (kept while the session stays suspended). */
const IDLE_PREFIX = 'No activity for ';

/**
 * Why the session is suspended and where the suspension stands. The cause is the idle timeout when
 * this reconcile suspended it, or when the stored suspension message says so (the cause is kept
 * from Suspending to Suspended); else a client's request.
 */
function suspendedMessage(inputs: StatusInputs): string {
  const { session } = inputs;
  const stored = readyCondition(session.status);
  const idle =
    inputs.suspendCause === 'idle' ||
    (stored !== undefined && isSuspendReason(stored.reason) && stored.message.startsWith(IDLE_PREFIX));
  const resume = 'spec.suspend=false, or the next call through the gateway, resumes it';
  const leaving = inputs.podLeaving;
  const state = leaving
    ? leaving.why === 'digest'
      ? `recording the workspace digest (verified resume) before Pod ${leaving.pod} is deleted`
      : `Pod ${leaving.pod} is being deleted`
    : inputs.persistent
      ? 'its Pod is deleted; its Secret, token and workspace are kept'
      : 'its Pod is deleted; its Secret and token are kept (the emptyDir workspace is lost)';
  const verb = leaving ? 'suspending' : 'suspended';
  if (idle) {
    return `${IDLE_PREFIX}${session.spec.idleTimeoutSeconds ?? ''}s; ${verb} (shutdownPolicy Suspend): ${state}. ${resume}`;
  }
  const Verb = verb.charAt(0).toUpperCase() + verb.slice(1);
  return `${Verb} (spec.suspend is true): ${state}. ${resume}`;
}

/** The complete status of the session. */
export function computeStatus(inputs: StatusInputs): SandboxSessionStatus {
  const { session, now, outcome } = inputs;
  const prev = session.status ?? {};
  const generation = session.metadata.generation ?? 0;
  const verdict = readyVerdict(inputs);
  const live = outcome.kind !== 'collected';
  // A suspended session reports no Pod, even while its Pod is still being deleted.
  const pod = live && !isSuspended(session) ? inputs.pod : undefined;
  const conditions = [condition(prev.conditions, { type: CONDITIONS.ready, ...verdict }, generation, now)];
  const scheduled = pod && mirroredPodScheduled(pod);
  if (scheduled) conditions.push(condition(prev.conditions, scheduled, generation, now));
  const workspace = workspaceCondition(prev, inputs.workspaceVerdict, generation, now);
  if (workspace) conditions.push(workspace);
  return withoutUndefined({
    observedGeneration: generation,
    conditions,
    ...(live ? childFields(session.metadata.name ?? '', pod, isSuspended(session)) : {}),
    ...claimField(inputs),
    ...workspaceFields(prev, inputs.workspaceVerdict),
    readyTime: prev.readyTime ?? (verdict.status === 'True' ? formatTime(now) : undefined),
    ...times(inputs),
    phase: phaseOf(verdict, outcome),
  });
}

/** The workspace claim's name, for persistent workspaces (kept after a Retain collection too). */
function claimField(inputs: StatusInputs): SandboxSessionStatus {
  if (!inputs.persistent) return {};
  return { workspaceClaimName: workspaceClaimName(inputs.session.metadata.name ?? '') };
}

/** The activity, resume and expiry times of status. */
function times(inputs: StatusInputs): SandboxSessionStatus {
  const activity = lastActivity(inputs.session);
  return {
    lastActivityTime: activity ? formatTime(activity) : undefined,
    lastResumeTime: inputs.resumeTime ? formatTime(inputs.resumeTime) : undefined,
    expiresAt: inputs.expiresAt ? formatTime(inputs.expiresAt) : undefined,
  };
}

/**
 * Names of the children, and where the Pod runs (podIP only while the Pod is not going away). A
 * suspended session has no Pod to name.
 */
function childFields(name: string, pod: PodView | undefined, suspended: boolean): SandboxSessionStatus {
  return {
    // A Pod bound from a pool keeps its own name (docs/adr/0016); a missing one will be podName(name).
    podName: suspended ? undefined : (pod?.metadata.name ?? podName(name)),
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
  if (isSuspendReason(verdict.reason)) return PHASES.suspended;
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
