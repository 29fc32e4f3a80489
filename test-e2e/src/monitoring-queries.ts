/**
 * The metric names the chart's Grafana dashboards and alert rules query
 * (charts/sandbox-platform/dashboards/*.json, monitoring/alerts.yaml), and the series names a
 * Prometheus text exposition (a /metrics answer) holds: what the monitoring-names unit test
 * (against the services' registries) and the dashboard-metrics e2e spec (against the running
 * services' /metrics) compare.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

import { parse } from 'yaml';

import { REPO_ROOT } from './framework/index.js';

export const CHART = join(REPO_ROOT, 'charts/sandbox-platform');

/** The chart's dashboard files (absolute paths). */
export function dashboardFiles(): string[] {
  return readdirSync(join(CHART, 'dashboards'))
    .filter((f) => f.endsWith('.json'))
    .map((f) => join(CHART, 'dashboards', f));
}

/**
 * Series names of a Prometheus text exposition, from its `# TYPE` lines (prom-client writes one
 * for every registered metric, observed or not): histograms as _bucket/_sum/_count, summaries as
 * name/_sum/_count, the rest as named.
 */
export function exposedSeries(text: string): Set<string> {
  const names = new Set<string>();
  for (const m of text.matchAll(/^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (\w+)$/gm)) {
    const [, name, type] = m;
    if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(`${name}${s}`);
    else if (type === 'summary') for (const s of ['', '_sum', '_count']) names.add(`${name}${s}`);
    else names.add(name!);
  }
  return names;
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

export interface Query {
  readonly where: string;
  readonly expr: string;
}

/** Every query of a Grafana dashboard: panel targets (rows included) and template variables. */
export function dashboardQueries(file: string): Query[] {
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

/** Every alert and recording rule expression of the chart's monitoring/alerts.yaml. */
export function ruleQueries(): Query[] {
  const doc = parse(readFileSync(join(CHART, 'monitoring/alerts.yaml'), 'utf8')) as {
    groups: Array<{ rules: Array<{ alert?: string; record?: string; expr: string }> }>;
  };
  return doc.groups.flatMap((g) =>
    g.rules.map((r) => ({ where: `rule ${r.alert ?? r.record ?? ''}`, expr: r.expr })),
  );
}

/** `where: name` for each metric name a query uses that is not in `known`. */
export function unknownNames(queries: Query[], known: Set<string>): string[] {
  return queries.flatMap((q) =>
    metricNamesIn(q.expr)
      .filter((n) => !known.has(n))
      .map((n) => `${q.where}: ${n}`),
  );
}
