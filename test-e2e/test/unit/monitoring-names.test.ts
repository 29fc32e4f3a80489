/**
 * Every metric the chart's Grafana dashboard and alert rules name is one the services export:
 * the names come from the operator's and the gateway's own metric registries (the objects their
 * /metrics serve), the queries from charts/sandbox-platform/dashboards/*.json and
 * monitoring/alerts.yaml. A renamed metric, or a typo in a query, fails here instead of drawing an
 * empty panel or an alert that can never fire.
 */
import { basename } from 'node:path';

import { describe, expect, it } from '@jest/globals';
import type { Registry } from 'prom-client';

import { createMetrics } from '../../../api-gateway/src/metrics.js';
import { SessionRegistry } from '../../../operator/src/controller/session-registry.js';
import { OperatorMetrics } from '../../../operator/src/telemetry/metrics.js';
import {
  dashboardFiles,
  dashboardQueries,
  exposedSeries,
  metricNamesIn,
  ruleQueries,
  unknownNames,
} from '../../src/monitoring-queries.js';

/** Series names a registry exports: histograms as _bucket/_sum/_count, summaries as name/_sum/_count. */
async function exported(registry: Registry): Promise<Set<string>> {
  const names = new Set<string>();
  for (const m of await registry.getMetricsAsJSON()) {
    const type = String(m.type);
    if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(`${m.name}${s}`);
    else if (type === 'summary') for (const s of ['', '_sum', '_count']) names.add(`${m.name}${s}`);
    else names.add(m.name);
  }
  return names;
}

/** What a /metrics of the platform can hold: the operator's and the gateway's (server) registries. */
async function platformMetrics(): Promise<Set<string>> {
  const operator = await exported(new OperatorMetrics(new SessionRegistry()).registry);
  const gateway = await exported(createMetrics(true).registry);
  return new Set([...operator, ...gateway]);
}

describe('metric names in the dashboard and the alerts', () => {
  it('the extractor finds metric names and nothing else', () => {
    expect(
      metricNamesIn(
        'histogram_quantile(0.95, sum by (le) (rate(a_seconds_bucket{namespace="$namespace", x=~"5.."}[$__rate_interval]))) > 1e-8',
      ),
    ).toEqual(['a_seconds_bucket']);
    expect(
      metricNamesIn(
        'sum(x_total) / sum(y_total) or absent(z{namespace="{{ .Release.Namespace }}"}) > {{ .Values.a }}',
      ),
    ).toEqual(['x_total', 'y_total', 'z']);
    expect(metricNamesIn('max by (reason) (m) > bool 3 unless on (pod) n offset 5m')).toEqual(['m', 'n']);
  });

  it("a /metrics answer's TYPE lines give the registry's series names (what the e2e spec reads)", async () => {
    for (const registry of [
      new OperatorMetrics(new SessionRegistry()).registry,
      createMetrics(true).registry,
    ]) {
      const names = await exported(registry);
      expect(names.size).toBeGreaterThan(20);
      expect(exposedSeries(await registry.metrics())).toEqual(names);
    }
  });

  it('flags a query naming a metric nobody exports', async () => {
    const known = await platformMetrics();
    expect(
      unknownNames(
        [{ where: 'test', expr: 'sum(rate(gateway_http_request_duration_seconds_count[5m]))' }],
        known,
      ),
    ).toEqual(['test: gateway_http_request_duration_seconds_count']);
  });

  it('the services export the names the chart relies on', async () => {
    const known = await platformMetrics();
    for (const name of [
      'workqueue_depth',
      'workqueue_adds_total',
      'workqueue_retries_total',
      'workqueue_queue_duration_seconds_bucket',
      'workqueue_work_duration_seconds_bucket',
      'workqueue_unfinished_work_seconds',
      'workqueue_longest_running_processor_seconds',
      'sandbox_operator_session_create_to_ready_seconds_bucket',
      'sandbox_operator_session_deadline_to_collect_seconds_bucket',
      'sandbox_gateway_http_request_duration_seconds_count',
    ]) {
      expect(known).toContain(name);
    }
    // The gateway's names carry the application prefix.
    const gateway = await exported(createMetrics(false).registry);
    expect([...gateway].filter((n) => !n.startsWith('sandbox_gateway_'))).toEqual([]);
  });

  it.each(dashboardFiles().map((f) => [basename(f), f]))(
    'dashboard %s: every query names an exported metric',
    async (_name, file) => {
      const queries = dashboardQueries(file);
      expect(queries.length).toBeGreaterThan(20);
      expect(unknownNames(queries, await platformMetrics())).toEqual([]);
    },
  );

  it('alert rules: every expression names an exported metric', async () => {
    const queries = ruleQueries();
    expect(queries.length).toBeGreaterThanOrEqual(6);
    expect(unknownNames(queries, await platformMetrics())).toEqual([]);
  });
});
