/** Formatting of the scale bench's figures: percentiles, rates, ratios, one line per fact. */
import { loadavg } from 'node:os';

import type { Burst } from './bursts.js';
import type { Failover } from './failover.js';
import { perObject, SESSION_RESOURCES, type Window } from './observe.js';

/** The p-th percentile (0..100) of sorted values, or NaN when empty. */
export function pct(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** "1.23" or "-" */
export function fixed(n: number | undefined, digits = 2): string {
  return n === undefined || Number.isNaN(n) ? '-' : n.toFixed(digits);
}

/** The 1-minute load average, for every line that reports a time. */
export function load(): string {
  return `load ${loadavg()[0]!.toFixed(1)}`;
}

/** One burst's figures. */
export function burstLine(what: string, b: Burst): string {
  const rate = b.windowMs > 0 ? ((b.n - b.failures) * 1000) / b.windowMs : Number.NaN;
  return (
    `${what} ${b.n}: all Ready in ${(b.windowMs / 1000).toFixed(1)} s (${rate.toFixed(0)}/s; creates answered in ` +
    `${(b.createsMs / 1000).toFixed(1)} s), create-to-Ready p50 ${fixed(pct(b.latencies, 50) / 1000)} s ` +
    `p99 ${fixed(pct(b.latencies, 99) / 1000)} s; Ready ${b.latencies.length}, failed creates ${b.failures}` +
    (b.firstError ? ` (first: ${b.firstError})` : '') +
    (b.watchErrors.length ? `; watch errors: ${b.watchErrors.slice(0, 2).join(' | ')}` : '') +
    `; ${load()}`
  );
}

/** What a window cost: CPU by process, memory of the named processes, calls per object. */
export function windowLines(w: Window, n: number): string[] {
  const mem = [...w.memory]
    .map(([name, m]) => `${name} ${m ? `${m.rssMb.toFixed(0)} MB (peak ${m.peakMb.toFixed(0)})` : 'gone'}`)
    .join(', ');
  const cores = (w.cpu.totalMs / Math.max(1, w.ms)).toFixed(2);
  return [
    `  CPU ${w.cpu.totalMs} ms in ${w.ms} ms (${cores} cores): ${w.cpu.text}`,
    `  RSS: ${mem}`,
    `  API calls per object: ${perObject(w.requests, n, SESSION_RESOURCES)}`,
  ];
}

/** The side-by-side summary of one size. */
export function compareLine(n: number, floor: Burst, sessions: Burst): string {
  const ratio = sessions.windowMs / Math.max(1, floor.windowMs);
  const p50 = pct(sessions.latencies, 50) / Math.max(1, pct(floor.latencies, 50));
  return (
    `== ${n}: sessions/floor ${ratio.toFixed(2)}x in time to all Ready (goal <= 1.3), ` +
    `${p50.toFixed(2)}x at p50 create-to-Ready; ${load()}`
  );
}

/** The failover's figures. */
export function failoverLine(f: Failover): string {
  const c = f.check;
  return (
    `failover (${f.mode}): killed ${f.killed}; Lease held by ${f.newLeader === f.killed ? 'the same Pod, restarted' : (f.newLeader ?? '-')}` +
    (f.leaseMs === undefined ? '' : ` after ${fixed(f.leaseMs / 1000, 1)} s`) +
    '; ' +
    `canary Ready after ${fixed((f.readyMs ?? NaN) / 1000, 1)} s (goal <= 15 s); sessions ${c.sessions}, pods ${c.pods}, ` +
    `secrets ${c.secrets}, duplicates ${c.duplicates}, orphans ${c.orphans} (${c.collected} children of deleted sessions went within 60 s), missing ${c.missing}` +
    (f.error ? `; error: ${f.error}` : '') +
    `; ${load()}`
  );
}
