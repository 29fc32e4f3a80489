/**
 * The lateral targets of the isolation matrix, read from the cluster: the agent of every kind of
 * sandbox Pod (a session of the same tenant and of another tenant, a gVisor session, a session
 * suspended and resumed, a warm pool Pod), listeners on the gateway's port range in those sessions,
 * every port the gateway and operator Pods declare, the API server, the kubelet. Each target names
 * its control place: the gateway's position for sandbox Pods, the target's node otherwise.
 */
import * as k8s from '@kubernetes/client-node';
import { AGENT_PORT, CONDITIONS, POOL_LABELS, REASONS, type SandboxSession } from '@sandbox-platform/api';
import type { SandboxClient } from '@sandbox-platform/client';

import { predicate, waitFor, type KubeClients } from '../../src/framework/index.js';
import { createPool, readSession } from '../support/custom-objects.js';
import type { Target } from './matrix.js';
import type { ControlPlaces } from './places.js';
import { RANGE_PORTS } from './report.js';
import { createSession, READY_TIMEOUT_MS } from './support.js';

/** A sandbox Pod the matrix targets: its cell suffix, its IP, and whether it runs the listener. */
export interface SandboxTarget {
  kind: string;
  podIP: string;
  listening: boolean;
}

/**
 * A listener on every range port (accepts and closes each connection), started as a background
 * process of the session; then waits until the last port accepts, from inside the session.
 */
export async function startListeners(gw: SandboxClient, name: string): Promise<void> {
  await untilAgentAnswers(gw, name);
  const py = [
    'import socket, select',
    `ls = [socket.create_server(("0.0.0.0", p)) for p in (${RANGE_PORTS.join(', ')})]`,
    'while True:',
    '    for l in select.select(ls, [], [])[0]:',
    '        l.accept()[0].close()',
  ].join('\n');
  await gw.startProcess(name, { command: `python3 -c '${py}'` });
  const last = RANGE_PORTS[RANGE_PORTS.length - 1];
  const r = await gw.exec(name, {
    command:
      `ok=0; for i in $(seq 100); do if (exec 3<>/dev/tcp/127.0.0.1/${last}) 2>/dev/null; then ok=1; break; fi; ` +
      'sleep 0.1; done; test $ok = 1',
    timeoutSeconds: 30,
  });
  if (r.exitCode !== 0) throw new Error(`the listener in ${name} did not start: ${r.stderr}`);
}

/**
 * Waits (at most 30 s) until an exec through the gateway answers. Seen on a fresh clone: a runc
 * session Ready for ~19 s whose first gateway call was refused (502, agent ECONNREFUSED) while its
 * kubelet probe passed; the retries are printed, so the log keeps what this wait absorbs.
 */
async function untilAgentAnswers(gw: SandboxClient, name: string): Promise<void> {
  const started = Date.now();
  const failures: string[] = [];
  for (;;) {
    try {
      await gw.exec(name, { command: 'true' });
      break;
    } catch (err) {
      const status = (err as { status?: number }).status;
      if ((status !== 502 && status !== 503) || Date.now() - started > 30_000) throw err;
      failures.push(`${status} after ${Date.now() - started} ms`);
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  if (failures.length > 0)
    console.warn(`session ${name}: the gateway reached its agent only after ${failures.join(', ')}`);
}

/** The session's Ready condition reason. */
const readyReason = (s: SandboxSession | undefined): string | undefined =>
  s?.status?.conditions?.find((c) => c.type === CONDITIONS.ready)?.reason;

/**
 * A session with a persistent workspace, suspended through the gateway (its Pod deleted) and
 * resumed (a new Pod): returns the resumed session, Ready with the new Pod's IP.
 */
export async function resumedSession(
  kube: KubeClients,
  gw: SandboxClient,
  namespace: string,
  name: string,
): Promise<SandboxSession> {
  const first = await createSession(kube, namespace, name, { workspace: { persistentVolumeClaim: {} } });
  const firstPod = await kube.core.readNamespacedPod({ namespace, name: first.status!.podName! });
  await gw.suspendSession(name);
  await waitFor(
    () => readSession(kube, namespace, name),
    predicate(`${name} Suspended`, (s) => readyReason(s) === REASONS.suspended),
    { timeoutMs: READY_TIMEOUT_MS, intervalMs: 500 },
  );
  // Suspended is reported as soon as spec.suspend is seen; with snapshots on, a persistent
  // workspace's Pod is kept until its digest is recorded (verified resume), and a resume before it
  // goes keeps that Pod. This target must be a new Pod: wait until the first one is gone.
  await waitFor(
    async () =>
      kube.core
        .readNamespacedPod({ namespace, name: firstPod.metadata!.name! })
        .then((p) => p.metadata?.uid)
        .catch(() => undefined),
    predicate(`${name}: its first Pod gone`, (uid) => uid !== firstPod.metadata?.uid),
    { timeoutMs: READY_TIMEOUT_MS, intervalMs: 500 },
  );
  await gw.resumeSession(name, { waitSeconds: 120 });
  const resumed = (await waitFor(
    () => readSession(kube, namespace, name),
    predicate(
      `${name} Ready again with a new Pod`,
      (s) => readyReason(s) === REASONS.ready && !!s?.status?.podIP,
    ),
    { timeoutMs: READY_TIMEOUT_MS, intervalMs: 500 },
  ))!;
  const pod = await kube.core.readNamespacedPod({ namespace, name: resumed.status!.podName! });
  if (pod.metadata?.uid === firstPod.metadata?.uid) throw new Error(`${name}: resumed on the same Pod`);
  return resumed;
}

/** A SandboxPool of one warm Pod: returns that Pod once Ready (owned by the pool, not bound). */
export async function warmPoolPod(kube: KubeClients, namespace: string, pool: string): Promise<k8s.V1Pod> {
  await createPool(kube, namespace, pool, { replicas: 1 });
  const warm = (pods: k8s.V1PodList): k8s.V1Pod | undefined =>
    pods.items.find(
      (p) =>
        !p.metadata?.deletionTimestamp &&
        p.status?.podIP &&
        p.metadata?.ownerReferences?.find((o) => o.controller)?.kind === 'SandboxPool' &&
        (p.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True'),
    );
  const list = await waitFor(
    () => kube.core.listNamespacedPod({ namespace, labelSelector: `${POOL_LABELS.pool}=${pool}` }),
    predicate(`a Ready warm Pod of pool ${pool}`, (l: k8s.V1PodList) => warm(l) !== undefined),
    { timeoutMs: READY_TIMEOUT_MS, intervalMs: 500 },
  );
  return warm(list)!;
}

/** The agent port and, where a listener runs, the range ports of each sandbox target. */
export async function sandboxTargets(sandboxes: SandboxTarget[], controls: ControlPlaces): Promise<Target[]> {
  const control = await controls.gateway();
  return sandboxes.flatMap((s) => [
    { name: `agent-${s.kind}`, host: s.podIP, port: AGENT_PORT, control },
    ...(s.listening
      ? RANGE_PORTS.map((port) => ({ name: `port-${port}-${s.kind}`, host: s.podIP, port, control }))
      : []),
  ]);
}

/**
 * One target per running Pod and port it declares (the API or probe port `http` and the `metrics`
 * port of the gateway and operator pods), so a port added to the chart is in the matrix too.
 */
export async function podPortTargets(
  kube: KubeClients,
  controls: ControlPlaces,
  where: { namespace: string; labelSelector: string; prefix: string },
): Promise<Target[]> {
  const pods = await kube.core.listNamespacedPod({
    namespace: where.namespace,
    labelSelector: where.labelSelector,
  });
  // Ready Pods only: one starting or going away during a rollout may not listen (its control
  // would then fail, and the cell be inconclusive).
  const running = pods.items.filter(
    (p) =>
      p.status?.podIP &&
      !p.metadata?.deletionTimestamp &&
      (p.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True'),
  );
  const targets = await Promise.all(
    running.map(async (pod, i) => {
      const control = await controls.node(pod.spec!.nodeName!);
      return (pod.spec?.containers ?? []).flatMap((c) =>
        (c.ports ?? []).map((p) => ({
          name: `${where.prefix}-${i}-${p.name ?? p.containerPort}`,
          host: pod.status!.podIP!,
          port: p.containerPort,
          control,
        })),
      );
    }),
  );
  const flat = targets.flat();
  if (!flat.some((t) => t.name.endsWith('-metrics'))) {
    throw new Error(
      `no ${where.prefix} pod declares a metrics port (${where.labelSelector} in ${where.namespace})`,
    );
  }
  return flat;
}

/** The API server (its Service and its host address) and the first node's kubelet. */
export async function controlPlaneTargets(kube: KubeClients, controls: ControlPlaces): Promise<Target[]> {
  const discovery = kube.kc.makeApiClient(k8s.DiscoveryV1Api);
  const svc = await kube.core.readNamespacedService({ name: 'kubernetes', namespace: 'default' });
  const slices = await discovery.listNamespacedEndpointSlice({
    namespace: 'default',
    labelSelector: 'kubernetes.io/service-name=kubernetes',
  });
  const ep = slices.items[0]!;
  const node = (await kube.core.listNode()).items[0]!;
  const nodeIP = node.status!.addresses!.find((a) => a.type === 'InternalIP')!.address;
  const control = await controls.node(node.metadata!.name!);
  return [
    { name: 'apiserver-service', host: svc.spec!.clusterIP!, port: 443, control },
    { name: 'apiserver-host', host: ep.endpoints[0]!.addresses[0]!, port: ep.ports![0]!.port!, control },
    { name: 'kubelet', host: nodeIP, port: 10250, control },
  ];
}
