/**
 * CPU time of the processes serving a mode (the gateway, a floor), read from /proc without asking
 * them: the sum over every thread of /proc/<pid>/task/<tid>/schedstat's first field (time on a
 * CPU, nanoseconds; user and kernel, GC and libuv threads included). Divided by the calls a mode
 * made, it is the mode's CPU per exec: what a call costs the machine, whatever the load, and so
 * how many calls a second the server could take on the cores it has.
 */
import { readdirSync, readFileSync } from 'node:fs';

import * as k8s from '@kubernetes/client-node';

import { findPodProcesses } from '@sandbox-platform/test-support';

/** CPU time so far of one process, all its threads, in ms (0 once it is gone). */
export function processCpuMs(pid: number): number {
  let ns = 0;
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return 0;
  }
  for (const tid of tasks) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return ns / 1e6;
}

/** A reader of the summed CPU time (ms) of fixed processes. */
export function cpuOf(pids: readonly number[]): () => number {
  return () => pids.reduce((sum, pid) => sum + processCpuMs(pid), 0);
}

/**
 * The node processes of the deployed gateway's pods (every replica: the Service spreads the
 * bench's connections over them), found on this machine through their cgroups. Undefined, with
 * the reason printed, when they are not here (another node, another cluster).
 */
export async function gatewayPids(
  kubeconfig: string,
  namespace: string,
  release: string,
): Promise<number[] | undefined> {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(kubeconfig);
  const pods = await kc.makeApiClient(k8s.CoreV1Api).listNamespacedPod({
    namespace,
    labelSelector: `app.kubernetes.io/component=gateway,app.kubernetes.io/instance=${release}`,
  });
  const running = pods.items.filter((p) => !p.metadata?.deletionTimestamp && p.status?.phase === 'Running');
  try {
    return findPodProcesses(running, { command: 'node' }).map((p) => p.pid);
  } catch (err) {
    console.log(`gateway CPU per exec not measured: ${err instanceof Error ? err.message : String(err)}`);
    return undefined;
  }
}
