/** Rendering of sessions and results: table (default), json, yaml, or names only. */
import type { Session } from '@sandbox-platform/client';
import { stringify } from 'yaml';

import type { Output } from './config.js';

/** Renders one value or a list of sessions in the chosen format (ends with a newline). */
export function render(output: Output, value: Session | Session[], now: Date = new Date()): string {
  const list = Array.isArray(value) ? value : [value];
  switch (output) {
    case 'json':
      return JSON.stringify(value, null, 2) + '\n';
    case 'yaml':
      return stringify(value);
    case 'name':
      return list.map((s) => s.name + '\n').join('');
    case 'table':
      return table(list, now);
  }
}

/** Renders any JSON value as json or yaml (table and name fall back to yaml). */
export function renderValue(output: Output, value: unknown): string {
  return output === 'json' ? JSON.stringify(value, null, 2) + '\n' : stringify(value);
}

const COLUMNS = ['NAME', 'READY', 'REASON', 'TRANSPORT', 'AGE', 'EXPIRES'] as const;

/** kubectl-style columns, padded to the widest cell. */
export function table(sessions: Session[], now: Date): string {
  if (sessions.length === 0) return 'No sessions found.\n';
  const rows = sessions.map((s) => [
    s.name,
    s.ready ? 'True' : 'False',
    s.reason || '-',
    s.execTransport,
    s.createdAt ? age(now.getTime() - Date.parse(s.createdAt)) : '-',
    s.expiresAt ? `in ${age(Date.parse(s.expiresAt) - now.getTime())}` : '-',
  ]);
  const all = [[...COLUMNS], ...rows];
  const widths = COLUMNS.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  return all
    .map(
      (r) =>
        r
          .map((cell, i) => cell.padEnd(widths[i] ?? 0))
          .join('   ')
          .trimEnd() + '\n',
    )
    .join('');
}

/** A duration the way kubectl prints ages: 45s, 3m, 2h5m, 4d. */
export function age(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 48) return m % 60 ? `${h}h${m % 60}m` : `${h}h`;
  return `${Math.floor(h / 24)}d`;
}
