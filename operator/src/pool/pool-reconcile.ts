/**
 * The pool reconcile: keeps spec.replicas warm Pods of the pool, built from its current template,
 * and writes the pool's status. Level-triggered like the session reconcile: it re-reads the pool
 * and its Pods from the index by key, whatever woke it up (a pool change, a warm Pod change, a
 * claim).
 *
 *   1. warm Pods that ended (Failed/Succeeded) or are outdated (another template hash) are deleted;
 *   2. missing warm Pods are created (at most maxCreatesPerPass per pass, then it runs again);
 *   3. surplus warm Pods are deleted, the not-Ready ones first;
 *   4. the status is computed and written when it changed.
 *
 * Nothing is done before the pool index has synced (both informers listed).
 *
 * Every delete of a warm Pod carries its UID and resourceVersion as preconditions: a Pod claimed
 * by a session since the index saw it is never deleted by the pool (the delete answers 409).
 */
import { isDeepStrictEqual } from 'node:util';

import { isAlreadyExists, isQuotaRefused } from '../kube/errors.js';
import { isPodReady, isTerminal } from '../controller/pod-readiness.js';
import type { Logger } from '../telemetry/log-port.js';
import type { PoolIndex } from './pool-index.js';
import type { PoolWriter } from './pool-kube.js';
import type { PoolMetrics } from './pool-metrics.js';
import { buildPoolPod, poolPodName, type PoolPodOptions } from './pool-pod.js';
import { computePoolStatus, countWarm, desiredReplicas, type PoolOutcome } from './pool-status.js';
import type { PoolPodView, PoolView } from './pool-view.js';

/** What the pool reconcile needs. */
export interface PoolDeps {
  readonly index: PoolIndex;
  readonly writer: PoolWriter;
  readonly podOptions: PoolPodOptions;
  /** The current template hash of a pool (cached per generation by the caller). */
  readonly hashOf: (pool: PoolView) => string;
  readonly metrics: PoolMetrics;
  readonly logger: Logger;
  readonly now: () => Date;
  /** Most warm Pods created in one pass (a large pool fills in several passes, each queued again). */
  readonly maxCreatesPerPass: number;
  /** Names of new warm Pods (random; injectable for tests). */
  readonly newName?: (pool: string) => string;
  /**
   * How long the pool waits for claims of its warm Pods to settle before it is reconciled
   * (refill-hold.ts); 0 or absent: now.
   */
  readonly holdMs?: (namespace: string, name: string) => number;
}

/** When to look at the pool again. */
export interface PoolResult {
  readonly requeueAfterMs?: number;
}

/** Reconciles one pool by its namespace and name. Throws (after writing status) when a write failed. */
export async function reconcilePool(namespace: string, name: string, deps: PoolDeps): Promise<PoolResult> {
  // Before both pool informers have listed, the index can hold the pool but not yet its Pods (the
  // pool informer's initial LIST queues the pool while the Pod informer is still listing): sized
  // then, a restarted operator created spec.replicas more warm Pods and deleted the surplus a
  // second later (seen in test-e2e/specs/pool/operator-kill). PoolController.start() queues every
  // pool once both have listed.
  if (!deps.index.synced) return {};
  const pool = deps.index.pool(namespace, name);
  if (!pool || pool.metadata.deletionTimestamp) {
    // Gone or going: the garbage collector deletes its warm Pods (bound ones are their sessions').
    deps.metrics.forget(namespace, name);
    return {};
  }
  // A claim of one of its warm Pods is under way: the refill and the status write wait for it.
  const hold = deps.holdMs ? deps.holdMs(namespace, name) : 0;
  if (hold > 0) return { requeueAfterMs: hold };
  const hash = deps.hashOf(pool);
  let outcome: PoolOutcome = { kind: 'ok' };
  let failure: unknown;
  let more = false;
  try {
    await removeEnded(pool, hash, deps);
    more = await resize(pool, hash, deps);
  } catch (err) {
    failure = err;
    outcome = isQuotaRefused(err) ? { kind: 'quota', message: err.message } : { kind: 'error' };
  }
  const warm = deps.index.warmPods(pool);
  const status = computePoolStatus({ pool, warm, hash, outcome, now: deps.now() });
  observe(pool, warm, hash, deps);
  if (!isDeepStrictEqual(pool.status ?? {}, status)) await deps.writer.patchStatus(pool, status);
  if (failure !== undefined) throw asError(failure);
  return more ? { requeueAfterMs: 0 } : {};
}

function asError(failure: unknown): Error {
  return failure instanceof Error ? failure : new Error('pool reconcile failed', { cause: failure });
}

/** Deletes warm Pods that ended or are outdated (never one claimed meanwhile: exact preconditions). */
async function removeEnded(pool: PoolView, hash: string, deps: PoolDeps): Promise<void> {
  for (const pod of deps.index.warmPods(pool)) {
    if (pod.metadata.deletionTimestamp) continue;
    const why = isTerminal(pod)
      ? `ended in phase ${pod.phase ?? ''}`
      : pod.templateHash !== hash
        ? 'outdated'
        : '';
    if (!why) continue;
    await remove(pod, deps, why);
  }
}

/** Creates missing or deletes surplus warm Pods; true when more remain to create. */
async function resize(pool: PoolView, hash: string, deps: PoolDeps): Promise<boolean> {
  const live = deps.index.warmPods(pool).filter((p) => !p.metadata.deletionTimestamp);
  const desired = desiredReplicas(pool);
  if (live.length > desired) {
    const surplus = [...live].sort(byReadiness).slice(0, live.length - desired);
    for (const pod of surplus) await remove(pod, deps, 'surplus');
    return false;
  }
  const missing = desired - live.length;
  const now = Math.min(missing, deps.maxCreatesPerPass);
  for (let i = 0; i < now; i++) await create(pool, hash, deps);
  return missing > now;
}

async function create(pool: PoolView, hash: string, deps: PoolDeps): Promise<void> {
  const name = (deps.newName ?? poolPodName)(pool.metadata.name);
  const body = buildPoolPod(pool, name, hash, deps.podOptions);
  let view: PoolPodView;
  try {
    view = await deps.writer.createPod(pool.metadata.namespace, body);
  } catch (err) {
    // A random name taken (about 2^-51): the next pass picks another.
    if (isAlreadyExists(err)) return;
    throw err;
  }
  deps.index.applyPod(view, 'added');
  deps.logger.info('created warm pod', {
    namespace: pool.metadata.namespace,
    pool: pool.metadata.name,
    pod: name,
  });
}

async function remove(pod: PoolPodView, deps: PoolDeps, why: string): Promise<void> {
  const outcome = await deps.writer.deletePod(pod, true);
  // Counted as leaving at once (the watch shows the deletionTimestamp a moment later).
  if (outcome === 'done')
    deps.index.applyPod(
      { ...pod, metadata: { ...pod.metadata, deletionTimestamp: deps.now().toISOString() } },
      'updated',
    );
  deps.logger.info(outcome === 'done' ? 'deleted warm pod' : 'warm pod changed before its delete; kept', {
    namespace: pod.metadata.namespace,
    pool: pod.pool,
    pod: pod.metadata.name,
    reason: why,
  });
}

/** Not-Ready Pods first (they serve nobody yet), then by name for a stable order. */
function byReadiness(a: PoolPodView, b: PoolPodView): number {
  return Number(isPodReady(a)) - Number(isPodReady(b)) || a.metadata.name.localeCompare(b.metadata.name);
}

function observe(pool: PoolView, warm: readonly PoolPodView[], hash: string, deps: PoolDeps): void {
  const counts = countWarm(warm, hash);
  deps.metrics.size(pool.metadata.namespace, pool.metadata.name, {
    desired: desiredReplicas(pool),
    warm: counts.replicas,
    ready: counts.ready,
    available: counts.available,
  });
}
