/**
 * Every metric the chart's Grafana dashboard and alert rules name is one the services export:
 * the names come from the operator's and the gateway's own metric registries (the objects their
 * /metrics serve), the queries from charts/sandbox-platform/dashboards/*.json and
 * monitoring/alerts.yaml. A renamed metric, or a typo in a query, fails here instead of drawing an
 * empty panel or an alert that can never fire.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from '@jest/globals';
import type { Registry } from 'prom-client';
import { parse } from 'yaml';

import { createMetrics } from '../../../api-gateway/src/metrics.js';
import { SessionRegistry } from '../../../operator/src/controller/session-registry.js';
import { OperatorMetrics } from '../../../operator/src/telemetry/metrics.js';
import { REPO_ROOT } from '../../src/framework/index.js';

const CHART = join(REPO_ROOT, 'charts/sandbox-platform');

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

const KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool']);
const KEYWORDS_BINARY = new Set(['and', 'or', 'unless', 'offset', 'atop', 'inf', 'nan']);

/**
 * Metric names in a PromQL expression: identifiers that are not functions or aggregations
 * (followed by `(`), keywords, label names (inside `{}` or a `by (...)` list), durations, strings
 * or numbers. Template expressions ({{ ... }}) and Grafana variables ($x) are dropped first.
 */
export function metricNamesIn(expr: string): string[] {
  const stripped = expr
    .replace(/\{\{.*?\}\}/g, '0')
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/'(?:[^'\\]|\\.)*'/g, "''")
    .replace(/\{[^}]*\}/g, '')
    .replace(/\[[^\]]*\]/g, '')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '')
    .replace(/\$\w+/g, '');
  const names: string[] = [];
  for (const m of stripped.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const word = m[0];
    const before = stripped[m.index - 1] ?? ' ';
    if (/[0-9.]/.test(before)) continue; // the exponent of a number (1e-8)
    if (
      stripped
        .slice(m.index + word.length)
        .trimStart()
        .startsWith('(')
    )
      continue;
    if (KEYWORDS.has(word) || KEYWORDS_BINARY.has(word.toLowerCase())) continue;
    names.push(word);
  }
  return names;
}

interface Query {
  readonly where: string;
  readonly expr: string;
}

/** Every query of a Grafana dashboard: panel targets (rows included) and template variables. */
function dashboardQueries(file: string): Query[] {
  const dashboard = JSON.parse(readFileSync(file, 'utf8')) as {
    panels?: Panel[];
    templating?: { list?: Array<{ name: string; query?: string | { query?: string } }> };
  };
  interface Panel {
    title?: string;
    panels?: Panel[];
    targets?: Array<{ expr?: string }>;
  }
  const queries: Query[] = [];
  const walk = (panels: Panel[] = []): void => {
    for (const p of panels) {
      for (const t of p.targets ?? [])
        if (t.expr) queries.push({ where: `panel "${p.title ?? ''}"`, expr: t.expr });
      walk(p.panels);
    }
  };
  walk(dashboard.panels);
  for (const v of dashboard.templating?.list ?? []) {
    const q = typeof v.query === 'string' ? v.query : v.query?.query;
    const metric = q && /label_values\(\s*([a-zA-Z_:][\w:]*)\s*,/.exec(q)?.[1];
    if (metric) queries.push({ where: `variable $${v.name}`, expr: metric });
  }
  return queries;
}

/** Every alert and recording rule expression of monitoring/alerts.yaml. */
function ruleQueries(): Query[] {
  const doc = parse(readFileSync(join(CHART, 'monitoring/alerts.yaml'), 'utf8')) as {
    groups: Array<{ rules: Array<{ alert?: string; record?: string; expr: string }> }>;
  };
  return doc.groups.flatMap((g) =>
    g.rules.map((r) => ({ where: `rule ${r.alert ?? r.record ?? ''}`, expr: r.expr })),
  );
}

function unknownNames(queries: Query[], known: Set<string>): string[] {
  return queries.flatMap((q) =>
    metricNamesIn(q.expr)
      .filter((n) => !known.has(n))
      .map((n) => `${q.where}: ${n}`),
  );
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

  it.each(readdirSync(join(CHART, 'dashboards')).filter((f) => f.endsWith('.json')))(
    'dashboard %s: every query names an exported metric',
    async (file) => {
      const queries = dashboardQueries(join(CHART, 'dashboards', file));
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
