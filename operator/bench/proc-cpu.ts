/**
 * CPU time of processes from /proc (user + system, clock ticks of 10 ms): the benchmark reports
 * where the CPU of each window went (operator, bench client, each control-plane component), which
 * is what decides the ratio when the machine is CPU-bound.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** User+system CPU time of a process so far in ms (0 when it is gone). */
function cpuMs(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return 0;
  }
}

/**
 * CPU so far of each direct child of `parent` (the localkube supervisor's components), keyed by
 * component name: the first non-flag argument after the binary (`localkube kube-apiserver ...`),
 * else the process name.
 */
function childrenCpuMs(parent: number | undefined): Map<string, number> {
  const out = new Map<string, number>();
  if (parent === undefined) return out;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.split(') ')[1]?.split(' ') ?? [];
      if (Number(fields[1]) !== parent) continue;
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      const name =
        argv.slice(1).find((a) => a && !a.startsWith('-')) ??
        stat.slice(stat.indexOf('(') + 1, stat.indexOf(')'));
      out.set(name, (out.get(name) ?? 0) + (Number(fields[11]) + Number(fields[12])) * 10);
    } catch {
      // the process exited while we read it
    }
  }
  return out;
}

/** CPU spent by each component between two snapshots, as "name 123 ms" joined by commas. */
function cpuDelta(before: Map<string, number>, after: Map<string, number>): string {
  return [...after]
    .map(([name, ms]) => [name, ms - (before.get(name) ?? 0)] as const)
    .filter(([, ms]) => ms > 0)
    .sort((a, b) => b[1] - a[1])
    .map(([name, ms]) => `${name} ${ms} ms`)
    .join(', ');
}

/** CPU spent in a window, in total and as "name N ms" by process, largest first. */
export interface CpuReport {
  readonly totalMs: number;
  /** CPU of each process (control-plane components by name). */
  readonly byName: ReadonlyMap<string, number>;
  readonly text: string;
}

/**
 * Starts a CPU window over named processes plus every component of the control plane; the
 * returned function ends it.
 */
export function cpuWindow(
  processes: Readonly<Record<string, number | undefined>>,
  controlPlane: number | undefined,
): () => CpuReport {
  const snapshot = (): Map<string, number> => {
    const m = childrenCpuMs(controlPlane);
    for (const [name, pid] of Object.entries(processes)) m.set(name, cpuMs(pid));
    return m;
  };
  const before = snapshot();
  return () => {
    const after = snapshot();
    const byName = new Map<string, number>();
    for (const [name, ms] of after) byName.set(name, ms - (before.get(name) ?? 0));
    const totalMs = [...byName.values()].reduce((a, b) => a + b, 0);
    return { totalMs, byName, text: cpuDelta(before, after) };
  };
}
