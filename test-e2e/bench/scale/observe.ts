/**
 * What a window cost, read without asking the processes measured: CPU time and peak resident set
 * of the operator and gateway processes from /proc (their containers run on this machine), the
 * CPU of every control-plane component (children of the localkube supervisor, KWOK among them),
 * and the API server's request counters by verb and resource (apiserver_request_total).
 * The V8 heap of a process is read from its /metrics once per phase (nodejs_heap_size_used_bytes).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';

import type * as k8s from '@kubernetes/client-node';

import { requestCounts, type RequestCounts } from '../../../operator/bench/apiserver-requests.js';
import { cpuWindow, type CpuReport } from '../../../operator/bench/proc-cpu.js';

/** A process by role name ("operator leader", "gateway 1"). */
export type Named = Readonly<Record<string, number>>;

/** Resident set now and its peak since the last reset, in MB. */
export interface Memory {
  readonly rssMb: number;
  readonly peakMb: number;
}

function statusField(pid: number, field: string): number | undefined {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : undefined;
  } catch {
    return undefined; // exited
  }
}

/** RSS and peak RSS (VmHWM) of a process, or undefined once it exited. */
export function memory(pid: number): Memory | undefined {
  const rssMb = statusField(pid, 'VmRSS');
  const peakMb = statusField(pid, 'VmHWM');
  return rssMb === undefined || peakMb === undefined ? undefined : { rssMb, peakMb };
}

/** Resets a process's peak RSS to its current RSS (clear_refs 5), so a phase reports its own peak. */
export function resetPeak(pid: number): void {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
  } catch {
    // exited: nothing to reset
  }
}

/** The localkube supervisor's pid (its components are its children). */
export function supervisorPid(localkubeDir: string): number | undefined {
  try {
    return Number(readFileSync(`${localkubeDir}/run/localkube.pid`, 'utf8').trim()) || undefined;
  } catch {
    return undefined;
  }
}

/** One measured window. */
export interface Window {
  readonly cpu: CpuReport;
  readonly memory: ReadonlyMap<string, Memory | undefined>;
  readonly requests: ReadonlyMap<string, number>;
  readonly ms: number;
}

/** Starts a window over the named processes; the function returned ends it. */
export async function startWindow(
  kc: k8s.KubeConfig,
  processes: Named,
  localkubeDir: string,
): Promise<() => Promise<Window>> {
  for (const pid of Object.values(processes)) resetPeak(pid);
  const before = await requestCounts(kc);
  const cpu = cpuWindow({ ...processes, 'bench client': process.pid }, supervisorPid(localkubeDir));
  const t0 = Date.now();
  return async () => {
    const ms = Date.now() - t0;
    const report = cpu();
    const mem = new Map(Object.entries(processes).map(([name, pid]) => [name, memory(pid)] as const));
    return { cpu: report, memory: mem, requests: delta(before, await requestCounts(kc)), ms };
  };
}

function delta(before: RequestCounts, after: RequestCounts): Map<string, number> {
  const out = new Map<string, number>();
  for (const [k, n] of after) {
    const d = n - (before.get(k) ?? 0);
    if (d > 0) out.set(k, d);
  }
  return out;
}

/**
 * API calls per object of the window, "VERB resource x.xx", most frequent first; calls made fewer
 * than 0.01 times per object are left out (other clients' background traffic).
 */
export function perObject(
  requests: ReadonlyMap<string, number>,
  n: number,
  resources: readonly string[],
): string {
  return [...requests]
    .filter(([k]) => resources.some((r) => k.split(' ')[1]?.startsWith(r)))
    .map(([k, c]) => [k, c / n] as const)
    .filter(([, r]) => r >= 0.01)
    .sort((a, b) => b[1] - a[1])
    .map(([k, r]) => `${k} ${r.toFixed(2)}`)
    .join(', ');
}

/** The resources whose calls a session (or a floor pair) causes. */
export const SESSION_RESOURCES = ['sandboxsessions', 'pods', 'secrets', 'events'] as const;

/** nodejs_heap_size_used_bytes of a process's /metrics (podIP:port), in MB; undefined on failure. */
export async function heapUsedMb(ip: string, port: number): Promise<number | undefined> {
  const m = /^nodejs_heap_size_used_bytes(?:\{[^}]*\})? (\S+)$/m.exec(await metricsText(ip, port));
  return m ? Number(m[1]) / 1048576 : undefined;
}

/**
 * The operator's work counters from its /metrics: reconciles (the reconcile duration histogram's
 * count), watch events by source (sessions, pods, secrets, resync, ...), status writes by the
 * Ready reason written, and Kubernetes Events by result (sent, failed, dropped).
 */
export async function operatorCounters(ip: string, port: number): Promise<Map<string, number>> {
  const text = await metricsText(ip, port);
  const out = new Map<string, number>();
  for (const m of text.matchAll(/^sandbox_operator_reconcile_duration_seconds_count\{[^}]*\} (\S+)$/gm))
    out.set('reconciles', (out.get('reconciles') ?? 0) + Number(m[1]));
  for (const m of text.matchAll(/^sandbox_operator_watch_events_total\{source="([^"]*)"\} (\S+)$/gm))
    out.set(`${m[1]} events`, Number(m[2]));
  for (const m of text.matchAll(/^sandbox_operator_status_writes_total\{reason="([^"]*)"\} (\S+)$/gm))
    out.set(`status writes ${m[1]}`, Number(m[2]));
  for (const m of text.matchAll(/^sandbox_operator_events_total\{result="([^"]*)"\} (\S+)$/gm))
    out.set(`Events ${m[1]}`, Number(m[2]));
  return out;
}

/** Counter increases between two readings, per object: "name x.xx", largest first. */
export function countersPerObject(
  before: ReadonlyMap<string, number>,
  after: ReadonlyMap<string, number>,
  n: number,
): string {
  return [...after]
    .map(([k, v]) => [k, (v - (before.get(k) ?? 0)) / n] as const)
    .filter(([, r]) => r >= 0.01)
    .sort((a, b) => b[1] - a[1])
    .map(([k, r]) => `${k} ${r.toFixed(2)}`)
    .join(', ');
}

async function metricsText(ip: string, port: number): Promise<string> {
  return new Promise<string>((resolve) => {
    const req = http.get({ host: ip, port, path: '/metrics', timeout: 5000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve(body));
      res.on('error', () => resolve(''));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(''));
  });
}
