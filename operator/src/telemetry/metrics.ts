/**
 * Prometheus metrics (prom-client), on a registry of our own (not prom-client's global one), served
 * at /metrics on its own port (http-server.ts). The operator's own names carry the
 * `sandbox_operator_` prefix; the work queue's are client-go's `workqueue_*`
 * (work-queue-metrics.ts). No label holds a session name: label cardinality stays bounded however
 * many sessions exist. docs/observability.md lists every metric.
 */
import { getHeapStatistics } from 'node:v8';

import { REASONS } from '@sandbox-platform/api';
import * as prom from 'prom-client';

import type { ExpiryReason } from '../controller/lifecycle.js';
import type { ReconcileObserver, ShutdownPolicy } from '../controller/observer.js';
import type { SessionRegistry } from '../controller/session-registry.js';
import { WorkQueueMetrics } from './work-queue-metrics.js';

/** Reasons of a session that is not Ready by design (collected, Retain; suspended): not "stuck". */
const AT_REST = new Set<string>([
  REASONS.ready,
  REASONS.idleTimeout,
  REASONS.lifetimeExceeded,
  REASONS.suspended,
  REASONS.suspending,
]);

/** The operator's metrics, and the ReconcileObserver that feeds the session gauges. */
export class OperatorMetrics implements ReconcileObserver {
  /** The registry to expose. */
  readonly registry = new prom.Registry();
  /** Duration of one reconcile, by result (ok, error). */
  readonly reconcileDuration: prom.Histogram<'result'>;
  /** The work queue's workqueue_* metrics; its hooks feed them. */
  readonly workQueue: WorkQueueMetrics;
  /** Time from a session's creation to its first Ready. */
  readonly createToReady: prom.Histogram;
  /** Time from a session's deadline (expiresAt) to its collection, by reason. */
  readonly deadlineToCollect: prom.Histogram<'reason'>;
  /**
   * Sessions collected, by reason (IdleTimeout, LifetimeExceeded) and policy (Delete, Retain,
   * Suspend: an idle session suspended, or a Suspend session at its lifetime).
   */
  readonly collectedTotal: prom.Counter<'reason' | 'policy'>;
  /** Status writes made, by the Ready reason written. */
  readonly statusWrites: prom.Counter<'reason'>;
  /** Kubernetes Events recorded, by what became of them (sent, failed, dropped). */
  readonly events: prom.Counter<'result'>;
  /** Events received from the watches, by source (sessions, pods, secrets, resync). */
  readonly watchEvents: prom.Counter<'source'>;
  /** 1 while this process holds the leader Lease. */
  readonly leader: prom.Gauge;
  /**
   * 1 while the default RuntimeClass (SANDBOX_DEFAULT_RUNTIME_CLASS_NAME) exists and applies to
   * sandbox Pods without one of their own; 0 when it does not exist, or none is set.
   */
  readonly defaultRuntimeClassAvailable: prom.Gauge;
  constructor(
    private readonly known: SessionRegistry,
    now: () => number = Date.now,
  ) {
    const registers = [this.registry];
    const sessions = known;
    prom.collectDefaultMetrics({ register: this.registry });
    this.workQueue = new WorkQueueMetrics(this.registry, now);
    this.reconcileDuration = new prom.Histogram({
      name: 'sandbox_operator_reconcile_duration_seconds',
      help: 'Duration of one reconcile of a SandboxSession, by result.',
      labelNames: ['result'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.createToReady = new prom.Histogram({
      name: 'sandbox_operator_session_create_to_ready_seconds',
      help: 'Time from SandboxSession creation to its first Ready=True.',
      buckets: [0.5, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 300],
      registers,
    });
    this.deadlineToCollect = new prom.Histogram({
      name: 'sandbox_operator_session_deadline_to_collect_seconds',
      help: 'Time from a SandboxSession deadline (idle or lifetime, status.expiresAt) to its collection, by reason.',
      labelNames: ['reason'],
      buckets: [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600],
      registers,
    });
    this.collectedTotal = new prom.Counter({
      name: 'sandbox_operator_sessions_collected_total',
      help: 'SandboxSessions collected for idleness or lifetime, by reason and shutdownPolicy.',
      labelNames: ['reason', 'policy'],
      registers,
    });
    this.statusWrites = new prom.Counter({
      name: 'sandbox_operator_status_writes_total',
      help:
        'SandboxSession status writes made, by the Ready reason written (progress-only ones, Creating ' +
        'and PodPending, are held back while other sessions are queued).',
      labelNames: ['reason'],
      registers,
    });
    this.events = new prom.Counter({
      name: 'sandbox_operator_events_total',
      help:
        'Kubernetes Events of SandboxSessions and SandboxSnapshots, by result: sent, failed (the API ' +
        'server refused the write) or dropped (the queue of 1000 was full).',
      labelNames: ['result'],
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
    this.defaultRuntimeClassAvailable = new prom.Gauge({
      name: 'sandbox_operator_default_runtime_class_available',
      help:
        '1 while the default RuntimeClass (SANDBOX_DEFAULT_RUNTIME_CLASS_NAME) exists and sandbox Pods ' +
        "without one of their own run under it; 0 when it does not exist (they get the node's default " +
        'runtime) or none is set.',
      registers,
    });
    new prom.Gauge({
      name: 'sandbox_operator_heap_limit_bytes',
      help:
        "V8's heap size limit of this process (operator.heapLimitMiB, NODE_OPTIONS=--max-old-space-size); " +
        'alert on nodejs_heap_size_used_bytes approaching it: the process dies when its heap is full.',
      registers,
      collect() {
        this.set(getHeapStatistics().heap_size_limit);
      },
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
    new prom.Gauge({
      name: 'sandbox_operator_session_not_ready_oldest_seconds',
      help:
        'Longest time a live SandboxSession known to this leader has been not Ready, by Ready reason ' +
        '(collected sessions excluded); alert on it for sessions stuck Pending.',
      labelNames: ['reason'],
      registers,
      collect() {
        this.reset();
        const at = now();
        for (const [reason, since] of sessions.earliestByReason()) {
          if (!AT_REST.has(reason)) this.set({ reason }, Math.max(0, (at - since) / 1000));
        }
      },
    });
  }

  /** ReconcileObserver: remembers the session's Ready reason and since when, for the session gauges. */
  readyReason(key: string, reason: string | undefined, since?: Date): void {
    this.known.set(key, reason, since?.getTime());
  }

  /** ReconcileObserver: counts a status write. */
  statusWritten(reason: string | undefined): void {
    this.statusWrites.inc({ reason: reason ?? 'None' });
  }

  /** ReconcileObserver: observes the create-to-Ready time. */
  firstReady(seconds: number): void {
    this.createToReady.observe(seconds);
  }

  /** ReconcileObserver: counts a collection and observes how late it came. */
  collected(reason: ExpiryReason, policy: ShutdownPolicy, secondsPastDeadline: number): void {
    this.collectedTotal.inc({ reason, policy });
    this.deadlineToCollect.observe({ reason }, secondsPastDeadline);
  }
}
