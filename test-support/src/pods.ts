import type * as k8s from '@kubernetes/client-node';

import { isNotFound } from './kube.js';
import { predicate, waitFor } from './wait-for.js';
import type { Predicate } from './wait-for.js';

/** The node tests' image: bash, coreutils and netecho (built by test-e2e/images, never pulled). */
export const TESTBOX_IMAGE = 'localhost/sandbox-platform/testbox:dev';

/**
 * A pod running `command` in the testbox image, with the restricted Pod Security settings the
 * platform's sandboxes use (so it runs in PSA-restricted namespaces too). Adjust with `modify`.
 */
export function testboxPod(name: string, command: string[], modify?: (pod: k8s.V1Pod) => void): k8s.V1Pod {
  const pod: k8s.V1Pod = {
    metadata: { name, labels: { app: name } },
    spec: {
      restartPolicy: 'Never',
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      terminationGracePeriodSeconds: 2,
      securityContext: { runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } },
      containers: [
        {
          name: 'main',
          image: TESTBOX_IMAGE,
          imagePullPolicy: 'IfNotPresent',
          command,
          securityContext: {
            allowPrivilegeEscalation: false,
            capabilities: { drop: ['ALL'] },
            readOnlyRootFilesystem: true,
          },
        },
      ],
    },
  };
  modify?.(pod);
  return pod;
}

/** Pod condition Ready=True. */
export const podReady: Predicate<k8s.V1Pod> = predicate('pod Ready=True', (pod) =>
  (pod.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True'),
);

/** Pod phase equals `phase`. */
export function podPhase(phase: string): Predicate<k8s.V1Pod> {
  return predicate(`pod phase ${phase}`, (pod) => pod.status?.phase === phase);
}

/** The first container terminated with `reason` (e.g. OOMKilled, Completed). */
export function containerTerminated(reason: string): Predicate<k8s.V1Pod> {
  return predicate(
    `container terminated with reason ${reason}`,
    (pod) => pod.status?.containerStatuses?.[0]?.state?.terminated?.reason === reason,
  );
}

/** Namespace and name of a pod. */
export interface PodRef {
  namespace: string;
  name: string;
}

/** Polls the pod until `until` holds; the timeout message names the predicate and the pod status. */
export function waitForPod(
  core: k8s.CoreV1Api,
  { namespace, name }: PodRef,
  until: Predicate<k8s.V1Pod>,
  timeoutMs = 60_000,
): Promise<k8s.V1Pod> {
  return waitFor(() => core.readNamespacedPod({ namespace, name }), until, {
    timeoutMs,
    intervalMs: 100,
    show: (pod) => JSON.stringify((pod as k8s.V1Pod).status ?? {}),
  });
}

/** Polls until the pod no longer exists. */
export async function waitForPodGone(
  core: k8s.CoreV1Api,
  namespace: string,
  name: string,
  timeoutMs = 60_000,
): Promise<void> {
  await waitFor(
    async () => {
      try {
        await core.readNamespacedPod({ namespace, name });
        return false;
      } catch (err) {
        if (isNotFound(err)) return true;
        throw err;
      }
    },
    predicate(`pod ${namespace}/${name} to be deleted`, (gone: boolean) => gone),
    { timeoutMs },
  );
}
