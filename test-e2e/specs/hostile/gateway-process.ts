/**
 * The in-cluster gateway's process, seen from the node. localkube runs its node on this machine,
 * so the gateway container's processes are ordinary processes here: found by the container id
 * in /proc/<pid>/cgroup, their memory read from /proc (VmRSS, VmHWM; the peak is reset through
 * clear_refs, which needs root, as the local cluster does) and from the container's memory
 * cgroup. Nothing here changes the gateway: reading /proc and resetting the peak counter only.
 */
import { readdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';

import type * as k8s from '@kubernetes/client-node';

export const MIB = 1 << 20;

/** Bytes of a Kubernetes memory quantity (512Mi, 1Gi, 500M, 1048576). */
export function memoryQuantity(q: string): number {
  const m = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?$/.exec(q);
  if (!m) throw new Error(`unsupported memory quantity ${q}`);
  const unit: Record<string, number> = {
    '': 1,
    Ki: 1024,
    Mi: MIB,
    Gi: 1024 * MIB,
    Ti: 1024 * 1024 * MIB,
    k: 1e3,
    M: 1e6,
    G: 1e9,
    T: 1e12,
  };
  return Math.round(Number(m[1]) * unit[m[2] ?? '']!);
}

/** The gateway pods of the release (app.kubernetes.io/component=gateway), Running first. */
export async function gatewayPods(
  core: k8s.CoreV1Api,
  namespace: string,
  release: string,
): Promise<k8s.V1Pod[]> {
  const list = await core.listNamespacedPod({
    namespace,
    labelSelector: `app.kubernetes.io/component=gateway,app.kubernetes.io/instance=${release}`,
  });
  return list.items.filter((p) => p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp);
}

/** Restart count of the pod's first container. */
export const restartCount = (pod: k8s.V1Pod): number => pod.status?.containerStatuses?.[0]?.restartCount ?? 0;

export interface ProcessMemory {
  /** Resident set now (VmRSS). */
  rss: number;
  /** Peak resident set since start or the last resetPeak (VmHWM). */
  hwm: number;
}

/** One gateway replica's main process on this node. */
export class GatewayProcess {
  private constructor(
    readonly podName: string,
    readonly pid: number,
    /** The container's resources.limits.memory in bytes (undefined: no limit). */
    readonly memoryLimit: number | undefined,
    /** The container's memory cgroup directory (v1 memory controller or v2 unified). */
    private readonly cgroupDir: string | undefined,
  ) {}

  /** The main process (the node process with the largest RSS) of every Running gateway pod. */
  static async findAll(core: k8s.CoreV1Api, namespace: string, release: string): Promise<GatewayProcess[]> {
    const pods = await gatewayPods(core, namespace, release);
    if (pods.length === 0) throw new Error(`no Running gateway pod in ${namespace}`);
    return pods.map((pod) => GatewayProcess.of(pod));
  }

  private static of(pod: k8s.V1Pod): GatewayProcess {
    const id = pod.status?.containerStatuses?.[0]?.containerID?.replace(/^[a-z]+:\/\//, '');
    if (!id) throw new Error(`gateway pod ${pod.metadata?.name} has no container id yet`);
    const pids = containerPids(id);
    if (pids.length === 0) {
      throw new Error(
        `no process of container ${id} on this machine: the gateway does not run on the local node`,
      );
    }
    const node = pids
      .filter((p) => readFileSafe(`/proc/${p}/comm`)?.trim() === 'node')
      .sort((a, b) => memory(b).rss - memory(a).rss)[0];
    if (node === undefined) throw new Error(`container ${id} has no node process (pids ${pids.join(', ')})`);
    const limit = pod.spec?.containers[0]?.resources?.limits?.memory;
    return new GatewayProcess(
      pod.metadata!.name!,
      node,
      limit ? memoryQuantity(limit) : undefined,
      memoryCgroupDir(node),
    );
  }

  memory(): ProcessMemory {
    return memory(this.pid);
  }

  /** Resets VmHWM to the current RSS, and the cgroup's peak where the kernel allows it (v1). */
  resetPeak(): void {
    writeFileSync(`/proc/${this.pid}/clear_refs`, '5');
    if (this.cgroupDir && existsSync(join(this.cgroupDir, 'memory.max_usage_in_bytes'))) {
      writeFileSync(join(this.cgroupDir, 'memory.max_usage_in_bytes'), '0');
    }
  }

  /**
   * The container cgroup's peak memory (page cache included): since the last resetPeak with
   * cgroup v1, since the container started with v2 (memory.peak). Undefined when unreadable.
   */
  cgroupPeak(): number | undefined {
    if (!this.cgroupDir) return undefined;
    for (const f of ['memory.max_usage_in_bytes', 'memory.peak']) {
      const v = readFileSafe(join(this.cgroupDir, f));
      if (v !== undefined) return Number(v.trim());
    }
    return undefined;
  }
}

function readFileSafe(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    // A process that exited between readdir and read, or a file this kernel does not have.
    if (['ENOENT', 'ESRCH', 'EACCES'].includes((err as NodeJS.ErrnoException).code ?? '')) return undefined;
    throw err;
  }
}

/** Pids whose cgroup path names the container id. */
function containerPids(id: string): number[] {
  const pids: number[] = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    if (readFileSafe(`/proc/${e}/cgroup`)?.includes(id)) pids.push(Number(e));
  }
  return pids;
}

function memory(pid: number): ProcessMemory {
  const status = readFileSafe(`/proc/${pid}/status`);
  if (status === undefined) throw new Error(`process ${pid} is gone`);
  const kb = (field: string): number =>
    Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
}

/** The memory cgroup directory of a process: v1's memory controller, else the v2 unified path. */
function memoryCgroupDir(pid: number): string | undefined {
  const lines = (readFileSafe(`/proc/${pid}/cgroup`) ?? '').split('\n');
  const v1 = lines.find((l) => /^\d+:memory:/.test(l))?.split(':')[2];
  if (v1 !== undefined) return join('/sys/fs/cgroup/memory', v1);
  const v2 = lines.find((l) => l.startsWith('0::'))?.slice(3);
  return v2 !== undefined ? join('/sys/fs/cgroup', v2) : undefined;
}
