/**
 * computePoolStatus: the whole status of a pool as a pure function of its warm Pods, as
 * computeStatus is for sessions. Conditions keep their lastTransitionTime while their status does
 * not change.
 */
import {
  POOL_CONDITIONS,
  POOL_REASONS,
  REASONS,
  type SandboxPoolCondition,
  type SandboxPoolStatus,
} from '@sandbox-platform/api';

import { isPodReady, podReadiness } from '../controller/pod-readiness.js';
import { formatTime, parseTime } from '../controller/time.js';
import type { PoolPodView, PoolView } from './pool-view.js';

/** How the pool reconcile ended, as far as status is concerned. */
export type PoolOutcome =
  { readonly kind: 'ok' } | { readonly kind: 'quota'; readonly message: string } | { readonly kind: 'error' };

/** What the pool reconcile observed. */
export interface PoolStatusInputs {
  readonly pool: PoolView;
  /** The pool's warm Pods (bound to no session), deleting ones included. */
  readonly warm: readonly PoolPodView[];
  /** The current template hash: Ready Pods with another one are not available. */
  readonly hash: string;
  readonly outcome: PoolOutcome;
  readonly now: Date;
}

/** Counts of the warm Pods. */
export interface PoolCounts {
  /** Warm Pods that exist and are not being deleted. */
  readonly replicas: number;
  /** Of them, Ready (agent up, IP). */
  readonly ready: number;
  /** Of them, Ready and built from the current template: bindable now. */
  readonly available: number;
}

/** Generic message of an unexpected failure: the detail is logged once, by the queue. */
export const POOL_ERROR_MESSAGE = 'Reconciling the pool failed; check the operator logs';

const FAILING = new Set<string>([REASONS.imagePullFailed, REASONS.podFailed, REASONS.unschedulable]);

/** The warm Pods a new session may be bound to: Ready, current template, not being deleted. */
export function isAvailable(pod: PoolPodView, hash: string): boolean {
  return isPodReady(pod) && pod.templateHash === hash;
}

/** Counts the warm Pods. */
export function countWarm(warm: readonly PoolPodView[], hash: string): PoolCounts {
  const live = warm.filter((p) => !p.metadata.deletionTimestamp);
  return {
    replicas: live.length,
    ready: live.filter(isPodReady).length,
    available: live.filter((p) => isAvailable(p, hash)).length,
  };
}

/** The pool's desired warm Pods (spec.replicas, CRD default 1). */
export function desiredReplicas(pool: PoolView): number {
  return pool.spec.replicas ?? 1;
}

/** spec.minReady, or 1 (0 for an empty pool) when unset. */
export function minReady(pool: PoolView): number {
  return pool.spec.minReady ?? Math.min(1, desiredReplicas(pool));
}

/** The complete status of the pool. */
export function computePoolStatus(inputs: PoolStatusInputs): SandboxPoolStatus {
  const { pool, now } = inputs;
  const counts = countWarm(inputs.warm, inputs.hash);
  const generation = pool.metadata.generation;
  const previous = pool.status?.conditions;
  return {
    observedGeneration: generation,
    ...counts,
    conditions: [
      condition(previous, readyVerdict(inputs, counts), generation, now),
      condition(previous, availableVerdict(pool, counts), generation, now),
    ],
  };
}

type Verdict = Pick<SandboxPoolCondition, 'type' | 'status' | 'reason' | 'message'>;

function readyVerdict(inputs: PoolStatusInputs, counts: PoolCounts): Verdict {
  const desired = desiredReplicas(inputs.pool);
  const type = POOL_CONDITIONS.ready;
  if (inputs.outcome.kind === 'quota')
    return { type, status: 'False', reason: POOL_REASONS.quotaExceeded, message: inputs.outcome.message };
  if (inputs.outcome.kind === 'error')
    return { type, status: 'False', reason: POOL_REASONS.reconcileError, message: POOL_ERROR_MESSAGE };
  const tally = `${counts.available} of ${desired} warm Pods available`;
  if (counts.available >= desired) return { type, status: 'True', reason: POOL_REASONS.full, message: tally };
  const failing = inputs.warm
    .filter((p) => !p.metadata.deletionTimestamp)
    .map(podReadiness)
    .find((r) => FAILING.has(r.reason));
  if (failing)
    return {
      type,
      status: 'False',
      reason: POOL_REASONS.podsFailing,
      message: `${tally}; ${failing.reason}: ${failing.message}`,
    };
  return {
    type,
    status: 'False',
    reason: POOL_REASONS.filling,
    message: `${tally}; ${counts.replicas} exist`,
  };
}

function availableVerdict(pool: PoolView, counts: PoolCounts): Verdict {
  const min = minReady(pool);
  const type = POOL_CONDITIONS.available;
  const message = `${counts.available} warm Pods available, at least ${min} wanted`;
  return counts.available >= min
    ? { type, status: 'True', reason: POOL_REASONS.enough, message }
    : { type, status: 'False', reason: POOL_REASONS.notEnough, message };
}

function condition(
  previous: readonly SandboxPoolCondition[] | undefined,
  next: Verdict,
  generation: number,
  now: Date,
): SandboxPoolCondition {
  const old = previous?.find((c) => c.type === next.type);
  const keep = old && old.status === next.status && parseTime(old.lastTransitionTime);
  return {
    ...next,
    observedGeneration: generation,
    lastTransitionTime: keep ? old.lastTransitionTime : formatTime(now),
  };
}
