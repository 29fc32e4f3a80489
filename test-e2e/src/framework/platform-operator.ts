/**
 * The platform's operator as the chaos specs see it: its pods (the Helm release's Deployment,
 * `app.kubernetes.io/component=operator`), the leader named by its Lease, a SIGKILL of their
 * processes on this machine (test-support/src/pod-processes.ts) and the wait until the kubelet has restarted them.
 * The release is E2E_PLATFORM_RELEASE in E2E_PLATFORM_NAMESPACE (platform.env; default sandbox
 * in sandbox-system), as in the other specs.
 */
import * as k8s from '@kubernetes/client-node';

import {
  findPodProcesses,
  predicate,
  sigkill,
  waitFor,
  type KubeClients,
  type PodProcess,
} from '@sandbox-platform/test-support';

const PLATFORM_NS = process.env.E2E_PLATFORM_NAMESPACE ?? 'sandbox-system';
const RELEASE = process.env.E2E_PLATFORM_RELEASE ?? 'sandbox';
/** The chart's operator Lease (templates/operator-lease.yaml: the operator's full name). */
const LEASE = `${RELEASE}-sandbox-platform-operator`;

const restartsOf = (pod: k8s.V1Pod): number =>
  (pod.status?.containerStatuses ?? []).reduce((n, c) => n + c.restartCount, 0);

const isReady = (pod: k8s.V1Pod): boolean =>
  pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

/** The release's operator pods that are not being deleted. */
export async function operatorPods(kube: KubeClients): Promise<k8s.V1Pod[]> {
  const list = await kube.core.listNamespacedPod({
    namespace: PLATFORM_NS,
    labelSelector: `app.kubernetes.io/component=operator,app.kubernetes.io/instance=${RELEASE}`,
  });
  return list.items.filter((p) => !p.metadata?.deletionTimestamp);
}

/** The holder of the operator's Lease (a pod name: the operator's identity), or undefined. */
export async function operatorLeader(kube: KubeClients): Promise<string | undefined> {
  const lease = await kube.kc
    .makeApiClient(k8s.CoordinationV1Api)
    .readNamespacedLease({ namespace: PLATFORM_NS, name: LEASE });
  return lease.spec?.holderIdentity || undefined;
}

/** What {@link killOperator} did. */
export interface OperatorKill {
  /** Date.now() right after the signals were sent. */
  readonly at: number;
  /** The Lease holder when the kill was decided. */
  readonly leader: string | undefined;
  readonly killed: readonly PodProcess[];
  /** The pods killed, with their container restart counts before the kill. */
  readonly pods: ReadonlyArray<{ readonly name: string; readonly uid: string; readonly restarts: number }>;
}

/** A kill made ready: the processes found, signalled by fire() at the moment the spec chooses. */
export interface ArmedOperatorKill {
  readonly leader: string | undefined;
  readonly targets: readonly PodProcess[];
  /** SIGKILLs the processes found (synchronous: no API call, no /proc scan). */
  fire(): OperatorKill;
}

/**
 * Finds the node process of the leader (`which: 'leader'`) or of every operator pod ('all') on this
 * machine, to be SIGKILLed by fire() with no warning to the operator. Throws when there is no
 * leader, or a pod's process is not on this machine.
 */
export async function armOperatorKill(
  kube: KubeClients,
  which: 'leader' | 'all',
): Promise<ArmedOperatorKill> {
  const [pods, leader] = await Promise.all([operatorPods(kube), operatorLeader(kube)]);
  const chosen = which === 'all' ? pods : pods.filter((p) => p.metadata?.name === leader);
  if (chosen.length === 0) {
    throw new Error(
      `no operator pod to kill (${which}; Lease holder ${leader ?? 'none'}; pods ` +
        `${pods.map((p) => p.metadata?.name).join(', ') || 'none'})`,
    );
  }
  const targets = findPodProcesses(chosen, { command: 'node' });
  const before = chosen.map((p) => ({
    name: p.metadata!.name!,
    uid: p.metadata!.uid!,
    restarts: restartsOf(p),
  }));
  return {
    leader,
    targets,
    fire: () => {
      sigkill(targets);
      return { at: Date.now(), leader, killed: targets, pods: before };
    },
  };
}

/** armOperatorKill and fire at once. */
export async function killOperator(kube: KubeClients, which: 'leader' | 'all'): Promise<OperatorKill> {
  return (await armOperatorKill(kube, which)).fire();
}

/**
 * Waits until the kubelet has restarted every killed pod's container (the same pod, its restart
 * count higher: proof that the kill took) and it is Ready again, and a Ready operator pod holds the
 * Lease. Returns the milliseconds from the kill.
 */
export async function waitOperatorRestarted(
  kube: KubeClients,
  kill: OperatorKill,
  timeoutMs = 180_000,
): Promise<number> {
  await waitFor(
    async () => {
      const [pods, leader] = await Promise.all([operatorPods(kube), operatorLeader(kube)]);
      return { pods, leader };
    },
    predicate(
      `operator pods ${kill.pods.map((p) => p.name).join(', ')} restarted and Ready, the Lease held by a Ready one`,
      ({ pods, leader }: { pods: k8s.V1Pod[]; leader: string | undefined }) =>
        kill.pods.every((k) => {
          const now = pods.find((p) => p.metadata?.uid === k.uid);
          return now !== undefined && restartsOf(now) > k.restarts && isReady(now);
        }) && pods.some((p) => p.metadata?.name === leader && isReady(p)),
    ),
    {
      timeoutMs,
      intervalMs: 500,
      show: (v) => {
        const { pods, leader } = v as { pods: k8s.V1Pod[]; leader: string | undefined };
        return `leader ${leader ?? 'none'}; ${pods
          .map((p) => `${p.metadata?.name} restarts ${restartsOf(p)} ready ${isReady(p)}`)
          .join('; ')}`;
      },
    },
  );
  return Date.now() - kill.at;
}

/** How long the kubelet remembers a container's crashes for its restart back-off (2 x 5 min). */
const BACKOFF_MEMORY_MS = 10 * 60_000;

/**
 * Starts a chaos spec from operator pods the kubelet restarts at once: when a container of an
 * operator pod died in the last 10 minutes (an earlier kill, this spec's or another chaos spec's),
 * the kubelet would hold its next restart back for 10 s, 20 s, ... up to 5 min, which is the
 * kubelet's crash-loop policy and not the operator's convergence. Such pods are deleted (the
 * Deployment replaces them, the operator shutting down gracefully); then every operator pod is
 * Ready and one holds the Lease. Returns the names of the pods replaced.
 */
export async function freshOperator(kube: KubeClients, timeoutMs = 180_000): Promise<string[]> {
  const pods = await operatorPods(kube);
  const recent = (p: k8s.V1Pod): boolean =>
    (p.status?.containerStatuses ?? []).some((c) => {
      const died = c.lastState?.terminated?.finishedAt;
      return died !== undefined && Date.now() - new Date(died).getTime() < BACKOFF_MEMORY_MS;
    });
  const stale = pods.filter(recent);
  await Promise.all(
    stale.map((p) => kube.core.deleteNamespacedPod({ namespace: PLATFORM_NS, name: p.metadata!.name! })),
  );
  const staleUids = new Set(stale.map((p) => p.metadata!.uid));
  await waitFor(
    async () => {
      const [now, leader] = await Promise.all([operatorPods(kube), operatorLeader(kube)]);
      return { pods: now, leader };
    },
    predicate(
      `${pods.length} operator pods Ready (none of the replaced), the Lease held by one`,
      ({ pods: now, leader }: { pods: k8s.V1Pod[]; leader: string | undefined }) =>
        now.length >= pods.length &&
        now.every((p) => isReady(p) && !staleUids.has(p.metadata?.uid)) &&
        now.some((p) => p.metadata?.name === leader),
    ),
    { timeoutMs, intervalMs: 500 },
  );
  return stale.map((p) => p.metadata!.name!);
}
