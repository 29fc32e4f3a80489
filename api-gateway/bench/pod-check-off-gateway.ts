/**
 * Cluster mode's Pod identity check on vs off (issue 25; goal: at most 3% on the exec p50): three
 * copies of the deployed gateway Deployment, one replica each, GATEWAY_POD_IDENTITY_CHECK=true,
 * =false and =false again. The second "off" is the noise floor: two copies alike in everything
 * differ by this much on this machine. All are dialled at their Pod IPs, so each mode reaches exactly one gateway process. The copy's Pods carry `sandbox.dev/gateway` (the sandbox
 * NetworkPolicies admit their dials) but their own component label, so the Service (and the
 * gateway's ingress policy) does not select them: the bench's calls through the Service still
 * reach the deployed replicas only. The copy is deleted at the end, also when the run fails.
 */
import * as k8s from '@kubernetes/client-node';

import { findPodProcesses } from '@sandbox-platform/test-support';

/** Marks the copy, and tells its Pods from the deployed ones. */
const BENCH_LABEL = 'sandbox.dev/bench';
const BENCH_VALUE = 'pod-check-off';
/** The copies: label value and check. */
const VARIANTS = [
  { variant: 'pod-check-on', check: true },
  { variant: BENCH_VALUE, check: false },
  { variant: 'pod-check-off-b', check: false },
] as const;
const COMPONENT = 'app.kubernetes.io/component';
const COPY_COMPONENT = 'gateway-pod-check-off';
const READY_TIMEOUT_MS = 120_000;

export interface PodCheckGateways {
  /** The copies' Pods: check on, check off, and check off again (the A/A noise floor). */
  on: { url: string; pid?: number };
  off: { url: string; pid?: number };
  offB: { url: string; pid?: number };
  close(): Promise<void>;
}

function gatewayPort(pod: k8s.V1Pod): number {
  const port = pod.spec?.containers
    .flatMap((c) => c.ports ?? [])
    .find((p) => p.name === 'http')?.containerPort;
  if (!port) throw new Error(`gateway Pod ${pod.metadata?.name} names no 'http' port`);
  return port;
}

function ready(pod: k8s.V1Pod): boolean {
  return (
    !pod.metadata?.deletionTimestamp &&
    pod.status?.phase === 'Running' &&
    !!pod.status.podIP &&
    (pod.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True')
  );
}

function pidOf(pod: k8s.V1Pod): number | undefined {
  try {
    return findPodProcesses([pod], { command: 'node' })[0]?.pid;
  } catch (err) {
    console.log(
      `CPU of ${pod.metadata?.name} not measured: ${err instanceof Error ? err.message : String(err)}`,
    );
    return undefined;
  }
}

/** A copy of `source` with the check `check`: one replica, its own name and selector label. */
function checkCopy(source: k8s.V1Deployment, variant: string, check: boolean): k8s.V1Deployment {
  const name = `${source.metadata!.name!}-${variant}`;
  const template = structuredClone(source.spec!.template);
  template.metadata = {
    ...template.metadata,
    labels: { ...template.metadata?.labels, [BENCH_LABEL]: variant, [COMPONENT]: COPY_COMPONENT },
  };
  for (const c of template.spec!.containers) {
    if (c.name !== 'gateway') continue;
    c.env = [
      ...(c.env ?? []).filter((e) => e.name !== 'GATEWAY_POD_IDENTITY_CHECK'),
      { name: 'GATEWAY_POD_IDENTITY_CHECK', value: String(check) },
    ];
  }
  // Nothing waits for a drain: the copy serves this bench only.
  template.spec!.terminationGracePeriodSeconds = 5;
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name,
      namespace: source.metadata!.namespace!,
      labels: { ...source.metadata?.labels, [BENCH_LABEL]: variant, [COMPONENT]: COPY_COMPONENT },
    },
    spec: {
      replicas: 1,
      selector: {
        matchLabels: {
          ...source.spec!.selector.matchLabels,
          [BENCH_LABEL]: variant,
          [COMPONENT]: COPY_COMPONENT,
        },
      },
      template,
    },
  };
}

export async function podCheckGateways(
  kubeconfig: string,
  namespace: string,
  release: string,
): Promise<PodCheckGateways> {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(kubeconfig);
  const apps = kc.makeApiClient(k8s.AppsV1Api);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const instance = `app.kubernetes.io/instance=${release}`;
  const selector = `${COMPONENT}=${COPY_COMPONENT},${instance}`;
  const deployments = (
    await apps.listNamespacedDeployment({ namespace, labelSelector: `${COMPONENT}=gateway,${instance}` })
  ).items;
  const source = deployments.find((d) => d.metadata?.labels?.[BENCH_LABEL] === undefined);
  if (!source) throw new Error(`no gateway Deployment of release ${release} in ${namespace}`);
  // Fresh copies, alike in everything but the check (age, traffic, heap): the deployed replicas
  // also serve the Service's calls, so one of them would not be a fair "on".
  const copies = VARIANTS.map((v) => checkCopy(source, v.variant, v.check));
  for (const copy of copies) {
    const name = copy.metadata!.name!;
    // A copy left by an interrupted run is replaced.
    await apps.deleteNamespacedDeployment({ namespace, name }).catch(() => undefined);
    await waitGone(apps, namespace, name);
  }
  for (const copy of copies) await apps.createNamespacedDeployment({ namespace, body: copy });
  const close = async (): Promise<void> => {
    for (const copy of copies)
      await apps.deleteNamespacedDeployment({
        namespace,
        name: copy.metadata!.name!,
        propagationPolicy: 'Foreground',
      });
  };
  try {
    const deadline = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      const pods = (await core.listNamespacedPod({ namespace, labelSelector: selector })).items.filter(ready);
      const [on, off, offB] = VARIANTS.map((v) =>
        pods.find((p) => p.metadata?.labels?.[BENCH_LABEL] === v.variant),
      );
      if (on && off && offB) {
        const at = (p: k8s.V1Pod): string => `http://${p.status!.podIP!}:${gatewayPort(p)}`;
        console.log(
          `Pod identity check on: ${on.metadata!.name} (${at(on)}); off: ${off.metadata!.name} (${at(off)}); ` +
            `off again: ${offB.metadata!.name} (${at(offB)})`,
        );
        return {
          on: { url: at(on), pid: pidOf(on) },
          off: { url: at(off), pid: pidOf(off) },
          offB: { url: at(offB), pid: pidOf(offB) },
          close,
        };
      }
      if (Date.now() > deadline)
        throw new Error(`the gateway copies were not Ready after ${READY_TIMEOUT_MS} ms`);
      await new Promise((r) => setTimeout(r, 500));
    }
  } catch (err) {
    await close().catch(() => undefined);
    throw err;
  }
}

async function waitGone(apps: k8s.AppsV1Api, namespace: string, name: string): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    try {
      await apps.readNamespacedDeployment({ namespace, name });
    } catch {
      return;
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`an earlier copy ${name} is still there after ${READY_TIMEOUT_MS} ms`);
}
