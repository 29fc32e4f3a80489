/**
 * OperatorMetrics as the controller feeds it: the oldest-not-Ready gauge (for the "stuck Pending"
 * alert), the deadline-to-collect histogram, and the reconcile phases in trace spans when a
 * tracer is given (none otherwise).
 */
import { getHeapStatistics } from 'node:v8';

import { describe, expect, it } from '@jest/globals';

import { reconcile } from '../../../src/controller/reconcile.js';
import { SessionRegistry } from '../../../src/controller/session-registry.js';
import { OperatorMetrics } from '../../../src/telemetry/metrics.js';
import { FakeCluster } from '../../fakes/fake-cluster.js';
import { FakeClock, controllerDeps } from '../../fakes/fakes.js';
import { session } from '../../fixtures/sessions.js';

const T0 = Date.parse('2030-01-01T00:00:00Z');

async function series(
  metrics: OperatorMetrics,
  name: string,
): Promise<Array<[Record<string, unknown>, number]>> {
  const all = await metrics.registry.getMetricsAsJSON();
  const m = all.find((x) => x.name === name) as
    { values: Array<{ labels: Record<string, unknown>; value: number; metricName?: string }> } | undefined;
  return (m?.values ?? [])
    .filter((v) => !v.metricName || v.metricName === name)
    .map((v) => [v.labels, v.value]);
}

describe('sandbox_operator_session_not_ready_oldest_seconds', () => {
  it('reports, per reason, how long the longest-waiting session has been not Ready', async () => {
    let now = T0 + 600_000;
    const metrics = new OperatorMetrics(new SessionRegistry(), () => now);
    metrics.readyReason('ns/a', 'PodPending', new Date(T0));
    metrics.readyReason('ns/b', 'PodPending', new Date(T0 + 300_000));
    metrics.readyReason('ns/c', 'Unschedulable', new Date(T0 + 540_000));
    metrics.readyReason('ns/d', 'SandboxReady', new Date(T0));
    metrics.readyReason('ns/e', 'IdleTimeout', new Date(T0));
    expect(await series(metrics, 'sandbox_operator_session_not_ready_oldest_seconds')).toEqual([
      [{ reason: 'PodPending' }, 600],
      [{ reason: 'Unschedulable' }, 60],
    ]);
    // The oldest becomes Ready; the other one is now the oldest.
    metrics.readyReason('ns/a', 'SandboxReady', new Date(T0 + 600_000));
    now += 60_000;
    expect(await series(metrics, 'sandbox_operator_session_not_ready_oldest_seconds')).toEqual([
      [{ reason: 'PodPending' }, 360],
      [{ reason: 'Unschedulable' }, 120],
    ]);
    // Gone sessions are forgotten.
    metrics.readyReason('ns/b', undefined);
    metrics.readyReason('ns/c', undefined);
    expect(await series(metrics, 'sandbox_operator_session_not_ready_oldest_seconds')).toEqual([]);
  });
});

describe('sandbox_operator_heap_limit_bytes', () => {
  it("is V8's heap limit of the process, which nodejs_heap_size_used_bytes approaches before it dies", async () => {
    const metrics = new OperatorMetrics(new SessionRegistry());
    const [[labels, limit]] = (await series(metrics, 'sandbox_operator_heap_limit_bytes')) as [
      [Record<string, unknown>, number],
    ];
    expect(labels).toEqual({});
    expect(limit).toBe(getHeapStatistics().heap_size_limit);
    const [[, used]] = (await series(metrics, 'nodejs_heap_size_used_bytes')) as [
      [Record<string, unknown>, number],
    ];
    expect(used).toBeGreaterThan(0);
    expect(used).toBeLessThan(limit);
  });
});

describe('sandbox_operator_session_deadline_to_collect_seconds', () => {
  it('observes how late each collection came, by reason', async () => {
    const metrics = new OperatorMetrics(new SessionRegistry());
    metrics.collected('IdleTimeout', 'Delete', 0.4);
    metrics.collected('LifetimeExceeded', 'Retain', 12);
    const text = await metrics.registry.metrics();
    expect(text).toContain(
      'sandbox_operator_session_deadline_to_collect_seconds_sum{reason="IdleTimeout"} 0.4',
    );
    expect(text).toContain(
      'sandbox_operator_session_deadline_to_collect_seconds_count{reason="LifetimeExceeded"} 1',
    );
    expect(text).toContain(
      'sandbox_operator_sessions_collected_total{reason="LifetimeExceeded",policy="Retain"} 1',
    );
  });
});

describe('reconcile with a phase tracer', () => {
  it('runs every phase through it, by name; without one the phases run directly', async () => {
    const cluster = new FakeCluster();
    cluster.putSession(session());
    const names: string[] = [];
    const deps = {
      ...controllerDeps(cluster, new FakeClock(T0 + 10_000)),
      tracePhase: <R>(name: string, run: () => Promise<R>): Promise<R> => {
        names.push(name);
        return run();
      },
    };
    await reconcile({ namespace: 'team-a', name: 'demo' }, deps);
    // Every phase of the reconcile, in its order (provisioning phases may be added between).
    // The claim phase comes first (ADR 0016: a pooled session's Secret is created while it claims).
    expect(names.slice(0, 2)).toEqual(['claimPooledPod', 'ensureSecret']);
    expect(names.at(-1)).toBe('expireIfDue');
    expect(names).toContain('ensurePod');
    expect(cluster.writes).toEqual(
      expect.arrayContaining(['createSecret sbs-demo-token', 'createPod sbs-demo', 'patchStatus demo']),
    );
  });
});
