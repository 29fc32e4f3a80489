/**
 * Helpers of the warm specs (issue 27, docs/adr/0016 "Env, Secrets and startup at bind time"): a
 * pool of the e2e tenant, Secrets, the operator's and the gateway's logs, and a grep of everything
 * an observer of the cluster can read about a session.
 */
import type * as k8s from '@kubernetes/client-node';
import { POOL_LABELS, POOL_KIND, type SandboxSession } from '@sandbox-platform/api';

import { predicate, waitFor } from '@sandbox-platform/test-support';
import { createPool, readPool } from '../support/custom-objects.js';
import { NS, READY_MS, kube, session } from '../suspend/support.js';

export { NS, READY_MS, kube, sbx, session } from '../suspend/support.js';

/** The namespace of the platform's operator and gateway (platform.env). */
export const PLATFORM_NS = process.env.E2E_PLATFORM_NAMESPACE ?? 'sandbox-system';

/** Creates a pool of `replicas` and waits until that many warm Pods are available. */
export async function warmPool(name: string, replicas: number): Promise<void> {
  await createPool(kube, NS, name, { replicas });
  await waitFor(
    () => readPool(kube, NS, name),
    predicate(`pool ${name}: ${replicas} available`, (p) => (p?.status?.available ?? 0) >= replicas),
    { timeoutMs: READY_MS, intervalMs: 500 },
  );
}

/** A Secret of the e2e namespace with one key. */
export async function putSecret(name: string, key: string, value: string): Promise<void> {
  await kube.core.createNamespacedSecret({
    namespace: NS,
    body: { metadata: { name }, stringData: { [key]: value } },
  });
}

export async function deleteSecret(name: string): Promise<void> {
  await kube.core.deleteNamespacedSecret({ namespace: NS, name }).catch(() => undefined);
}

/** Every Pod of a pool (warm or bound since), those being deleted included. */
export async function poolPods(pool: string): Promise<k8s.V1Pod[]> {
  const list = await kube.core.listNamespacedPod({
    namespace: NS,
    labelSelector: `${POOL_LABELS.pool}=${pool}`,
  });
  return list.items;
}

/** The pool's warm Pods (still the pool's, not being deleted). */
export const warmOf = (pods: readonly k8s.V1Pod[]): k8s.V1Pod[] =>
  pods.filter(
    (p) =>
      !p.metadata?.deletionTimestamp &&
      p.metadata?.ownerReferences?.find((o) => o.controller)?.kind === POOL_KIND,
  );

/** The logs of every container of every operator and gateway Pod (current runs). */
export async function platformLogs(): Promise<string> {
  const list = await kube.core.listNamespacedPod({ namespace: PLATFORM_NS });
  const logs = await Promise.all(
    list.items
      .filter((p) =>
        ['operator', 'gateway'].includes(p.metadata?.labels?.['app.kubernetes.io/component'] ?? ''),
      )
      .flatMap((p) =>
        (p.spec?.containers ?? []).map((c) =>
          kube.core
            .readNamespacedPodLog({ namespace: PLATFORM_NS, name: p.metadata!.name!, container: c.name })
            .then(String),
        ),
      ),
  );
  return logs.join('\n');
}

/** What an observer can read about a session besides its shell: its Pod, its status, the namespace's Events. */
export async function observable(
  s: SandboxSession,
): Promise<{ pod: string; status: string; events: string }> {
  const pod = await kube.core.readNamespacedPod({ namespace: NS, name: s.status!.podName! });
  const events = await kube.core.listNamespacedEvent({ namespace: NS });
  return {
    pod: JSON.stringify(pod),
    status: JSON.stringify((await session(s.metadata.name!))?.status),
    events: JSON.stringify(events.items),
  };
}
