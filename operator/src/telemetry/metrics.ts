/**
 * Prometheus metrics (prom-client), on a registry of our own (not prom-client's global one), served
 * at /metrics. Names carry the `sandbox_operator_` prefix. No label holds a session name: label
 * cardinality stays bounded however many sessions exist.
 */
import { REASONS } from '@sandbox-platform/api';
import * as prom from 'prom-client';

import type { ExpiryReason } from '../controller/lifecycle.js';
import type { ReconcileObserver } from '../controller/observer.js';
import type { SessionRegistry } from '../controller/session-registry.js';

/** The operator's metrics, and the ReconcileObserver that feeds the session gauges. */
export class OperatorMetrics implements ReconcileObserver {
  /** The registry to expose. */
  readonly registry = new prom.Registry();
  /** Duration of one reconcile, by result (ok, error). */
  readonly reconcileDuration: prom.Histogram<'result'>;
  /** Keys waiting in the work queue. */
  readonly queueDepth: prom.Gauge;
  /** Reconciles that failed and were scheduled for a retry with backoff. */
  readonly retries: prom.Counter;
  /** Time from a session's creation to its first Ready. */
  readonly createToReady: prom.Histogram;
  /** Sessions collected, by reason (IdleTimeout, LifetimeExceeded) and policy (Delete, Retain). */
  readonly collectedTotal: prom.Counter<'reason' | 'policy'>;
  /** Events received from the watches, by source (sessions, pods, secrets, resync). */
  readonly watchEvents: prom.Counter<'source'>;
  /** 1 while this process holds the leader Lease. */
  readonly leader: prom.Gauge;
  constructor(private readonly known: SessionRegistry) {
    const registers = [this.registry];
    const sessions = known;
    prom.collectDefaultMetrics({ register: this.registry });
    this.reconcileDuration = new prom.Histogram({
      name: 'sandbox_operator_reconcile_duration_seconds',
      help: 'Duration of one reconcile of a SandboxSession, by result.',
      labelNames: ['result'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.queueDepth = new prom.Gauge({
      name: 'sandbox_operator_queue_depth',
      help: 'SandboxSession keys waiting in the work queue.',
      registers,
    });
    this.retries = new prom.Counter({
      name: 'sandbox_operator_reconcile_retries_total',
      help: 'Failed reconciles scheduled for a retry with backoff.',
      registers,
    });
    this.createToReady = new prom.Histogram({
      name: 'sandbox_operator_session_create_to_ready_seconds',
      help: 'Time from SandboxSession creation to its first Ready=True.',
      buckets: [0.5, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 300],
      registers,
    });
    this.collectedTotal = new prom.Counter({
      name: 'sandbox_operator_sessions_collected_total',
      help: 'SandboxSessions collected for idleness or lifetime, by reason and shutdownPolicy.',
      labelNames: ['reason', 'policy'],
      registers,
    });
    this.watchEvents = new prom.Counter({
      name: 'sandbox_operator_watch_events_total',
      help: 'Watch events and resync keys that were queued, by source.',
      labelNames: ['source'],
      registers,
    });
    this.leader = new prom.Gauge({
      name: 'sandbox_operator_leader',
      help: '1 while this process holds the leader Lease and reconciles.',
      registers,
    });
    new prom.Gauge({
      name: 'sandbox_operator_sessions',
      help: 'SandboxSessions known to this leader, by Ready condition status and reason.',
      labelNames: ['ready', 'reason'],
      registers,
      collect() {
        this.reset();
        for (const [reason, n] of sessions.countsByReason()) {
          this.set({ ready: reason === REASONS.ready ? 'True' : 'False', reason }, n);
        }
      },
    });
  }

  /** ReconcileObserver: remembers the session's Ready reason for the sessions gauge. */
  readyReason(key: string, reason: string | undefined): void {
    this.known.set(key, reason);
  }

  /** ReconcileObserver: observes the create-to-Ready time. */
  firstReady(seconds: number): void {
    this.createToReady.observe(seconds);
  }

  /** ReconcileObserver: counts a collection. */
  collected(reason: ExpiryReason, policy: 'Delete' | 'Retain'): void {
    this.collectedTotal.inc({ reason, policy });
  }
}
