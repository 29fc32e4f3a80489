/**
 * The processes of a pod's containers on this machine, and SIGKILL for them: the chaos specs'
 * "kill -9" of a component (the operator) without asking Kubernetes, so nothing gets to shut down
 * cleanly (no Lease release, no half-written status finished) and the kubelet restarts the
 * container as after a crash.
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
    found.push({ pod: pod.metadata!.name!, container: container.name, pid: Number(entry), argv });
  }
  return found;
}

/**
 * Sends SIGKILL to the matching processes of every pod, all found before the first is killed (so
 * one pod's restart does not race the search of the next). Throws, killing nothing, when a pod has
 * no matching process on this machine: a chaos test that killed nothing must not pass.
 */
export function sigkillPodProcesses(pods: readonly k8s.V1Pod[], filter: PodProcessFilter = {}): PodProcess[] {
  const all = pods.map((pod) => {
    const procs = podProcesses(pod, filter);
    if (procs.length === 0) {
      throw new Error(
        `no process of pod ${pod.metadata?.namespace}/${pod.metadata?.name} matching ` +
          `${JSON.stringify(filter)} on this machine (another node, or its containers are not running)`,
      );
    }
    return procs;
  });
  const killed = all.flat();
  for (const p of killed) {
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch (err) {
      // Exited on its own since it was found: it is not running, which is what was asked.
      if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
    }
  }
  return killed;
}
