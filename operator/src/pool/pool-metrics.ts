/**
 * Warm pool metrics (docs/observability.md), on the operator's registry. Labels hold the namespace
 * and the pool's name: bounded by the number of pools, never by sessions.
 */
import * as prom from 'prom-client';

/** How a claim for a session ended. */
export type ClaimResult =
  /** A warm Pod was bound to the session. */
  | 'hit'
  /** No available warm Pod (or none could be bound): the session is created cold. */
  | 'miss'
  /** A warm Pod changed between being seen and being claimed (another claim, the pool's delete). */
  | 'conflict'
  /** A claimed Pod's agent refused or did not answer the bind: the Pod is deleted. */
  | 'bind_failed';

/** Warm Pod counts by state. */
export type PoolState = 'desired' | 'warm' | 'ready' | 'available';

/** The metrics. */
export class PoolMetrics {
  /** Claims by result. */
  readonly claims: prom.Counter<'namespace' | 'pool' | 'result'>;
  /** Time from the start of a claim to the bound Pod (patch and bind), for hits. */
  readonly claimDuration: prom.Histogram<'namespace' | 'pool'>;
  /** Pool size: desired, warm (existing), ready and available warm Pods. */
  readonly pods: prom.Gauge<'namespace' | 'pool' | 'state'>;

  constructor(registry: prom.Registry) {
    const registers = [registry];
    this.claims = new prom.Counter({
      name: 'sandbox_operator_pool_claims_total',
      help: 'Claims of a warm Pod for a new SandboxSession, by pool and result (hit, miss, conflict, bind_failed).',
      labelNames: ['namespace', 'pool', 'result'],
      registers,
    });
    this.claimDuration = new prom.Histogram({
      name: 'sandbox_operator_pool_claim_duration_seconds',
      help: 'Time to claim and bind a warm Pod to a SandboxSession (hits only), by pool.',
      labelNames: ['namespace', 'pool'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    });
    this.pods = new prom.Gauge({
      name: 'sandbox_operator_pool_pods',
      help: 'Warm Pods of a SandboxPool by state: desired (spec.replicas), warm (exist), ready, available (bindable).',
      labelNames: ['namespace', 'pool', 'state'],
      registers,
    });
  }

  /** Counts a claim's result (and its duration for a hit). */
  claimed(namespace: string, pool: string, result: ClaimResult, seconds?: number): void {
    this.claims.inc({ namespace, pool, result });
    if (result === 'hit' && seconds !== undefined) this.claimDuration.observe({ namespace, pool }, seconds);
  }

  /** Sets the pool's size gauges. */
  size(namespace: string, pool: string, counts: Record<PoolState, number>): void {
    for (const [state, n] of Object.entries(counts)) this.pods.set({ namespace, pool, state }, n);
  }

  /** Drops the gauges of a deleted pool. */
  forget(namespace: string, pool: string): void {
    for (const state of ['desired', 'warm', 'ready', 'available'] as const)
      this.pods.remove({ namespace, pool, state });
  }
}
