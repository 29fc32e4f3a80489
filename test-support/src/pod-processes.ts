/**
 * The processes of a pod's containers on this machine, and signals for them: the chaos specs'
 * "kill -9" of a component (the operator) without asking Kubernetes, so nothing gets to shut down
 * cleanly (no Lease release, no half-written status finished) and the kubelet restarts the
 * container as after a crash; SIGSTOP/SIGCONT to freeze a process for a moment (a sandbox agent
 * that does not answer yet).
 *
 * Only for a node on this machine (localkube): its containers' processes are ordinary processes
 * here. A process belongs to a container when its /proc/<pid>/cgroup path names both the pod UID
 * and the container's id: the kubelet's cgroupfs driver (localkube's) spells the UID with dashes
 * (`/kubepods/burstable/pod<uid>/<container id>`), the systemd driver with underscores
 * (`kubepods-burstable-pod<uid_with_underscores>.slice/cri-containerd-<id>.scope`); both are
 * matched. The pod's sandbox (pause) process has no container id of the pod's status, so it is
 * never killed: the kubelet restarts the containers, it does not recreate the pod.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { basename } from 'node:path';

import type * as k8s from '@kubernetes/client-node';

/** One process of a pod's container. */
export interface PodProcess {
  readonly pod: string;
  readonly container: string;
  readonly pid: number;
  /** Start time in clock ticks since boot (/proc/<pid>/stat): tells the process from a later one with its pid. */
  readonly startTime: string;
  /** The command line (for logs). */
  readonly argv: readonly string[];
}

/** Which processes of a pod: those of the named containers, whose program is `command`. */
export interface PodProcessFilter {
  /** Container names (default: every container of the pod's status). */
  readonly containers?: readonly string[];
  /** Program name: /proc/<pid>/comm, or the basename of argv[0] (default: any). */
  readonly command?: string;
}

function readProc(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    // The process exited between readdir and read.
    if (['ENOENT', 'ESRCH'].includes((err as NodeJS.ErrnoException).code ?? '')) return undefined;
    throw err;
  }
}

/** The pod's running containers that the filter selects, with their runtime ids. */
function runningContainers(pod: k8s.V1Pod, filter: PodProcessFilter): Array<{ name: string; id: string }> {
  return (pod.status?.containerStatuses ?? [])
    .filter((c) => c.state?.running && c.containerID)
    .filter((c) => !filter.containers || filter.containers.includes(c.name))
    .map((c) => ({ name: c.name, id: c.containerID!.replace(/^[a-z0-9-]+:\/\//, '') }));
}

/** The process's command line, or undefined when it does not run `command` (any when unset). */
function commandLine(pid: string, command: string | undefined): string[] | undefined {
  const argv = (readProc(`/proc/${pid}/cmdline`) ?? '').split('\0').filter((a) => a !== '');
  if (!command) return argv;
  const comm = readProc(`/proc/${pid}/comm`)?.trim();
  return comm === command || basename(argv[0] ?? '') === command ? argv : undefined;
}

/** Field 22 of /proc/<pid>/stat (after the command in parentheses, which may hold spaces). */
function startTimeOf(pid: number | string): string | undefined {
  const stat = readProc(`/proc/${pid}/stat`);
  return stat?.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
}

/** The pod UID as cgroup paths spell it: with dashes (cgroupfs driver) or underscores (systemd). */
function uidSpellings(pod: k8s.V1Pod): string[] {
  const uid = pod.metadata?.uid;
  if (!uid) throw new Error(`pod ${pod.metadata?.name} has no UID`);
  return [uid, uid.replaceAll('-', '_')];
}

/**
 * The running containers' processes of a pod on this machine. Empty when the pod runs on another
 * node, or its containers are not running (no container id in the status).
 */
export function podProcesses(pod: k8s.V1Pod, filter: PodProcessFilter = {}): PodProcess[] {
  const uids = uidSpellings(pod);
  const containers = runningContainers(pod, filter);
  if (containers.length === 0) return [];
  const found: PodProcess[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const cgroup = readProc(`/proc/${entry}/cgroup`);
    if (!cgroup || !uids.some((u) => cgroup.includes(u))) continue;
    const container = containers.find((c) => cgroup.includes(c.id));
    const argv = container && commandLine(entry, filter.command);
    if (!container || !argv) continue;
    const startTime = startTimeOf(entry);
    if (startTime === undefined) continue;
    found.push({ pod: pod.metadata!.name!, container: container.name, pid: Number(entry), startTime, argv });
  }
  return found;
}

/**
 * The matching processes of every pod. Throws when a pod has none on this machine: a chaos test
 * that would kill nothing must not pass.
 */
export function findPodProcesses(pods: readonly k8s.V1Pod[], filter: PodProcessFilter = {}): PodProcess[] {
  return pods.flatMap((pod) => {
    const procs = podProcesses(pod, filter);
    if (procs.length === 0) {
      throw new Error(
        `no process of pod ${pod.metadata?.namespace}/${pod.metadata?.name} matching ` +
          `${JSON.stringify(filter)} on this machine (another node, or its containers are not running)`,
      );
    }
    return procs;
  });
}

/**
 * Sends a signal to processes found earlier (findPodProcesses), synchronously: a spec finds them
 * ahead and signals at the moment it chooses, with no /proc scan in between. A process that is no
 * longer the one found (exited, its pid reused: another start time) is not signalled; the call
 * then throws after signalling the others, since that part did not happen.
 */
export function signalProcesses(procs: readonly PodProcess[], signal: NodeJS.Signals): void {
  const gone: string[] = [];
  for (const p of procs) {
    if (startTimeOf(p.pid) !== p.startTime) {
      gone.push(`${p.pod} pid ${p.pid}`);
      continue;
    }
    try {
      process.kill(p.pid, signal);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
      gone.push(`${p.pod} pid ${p.pid}`);
    }
  }
  if (gone.length > 0)
    throw new Error(`no ${signal} sent, no longer running since found: ${gone.join(', ')}`);
}

/** SIGKILL (signalProcesses): the chaos "kill -9", no cleanup in the process. */
export function sigkill(procs: readonly PodProcess[]): void {
  signalProcesses(procs, 'SIGKILL');
}

/** Finds the matching processes of every pod and SIGKILLs them; returns them. */
export function sigkillPodProcesses(pods: readonly k8s.V1Pod[], filter: PodProcessFilter = {}): PodProcess[] {
  const procs = findPodProcesses(pods, filter);
  sigkill(procs);
  return procs;
}
