/**
 * Helpers of the suspend e2e specs (suspend-resume, operator-kill): the gateway client of the e2e
 * tenant, a session read through the Kubernetes API, its Ready reason, its Pods and its workspace
 * claim, and an exec through the gateway.
 */
import type * as k8s from '@kubernetes/client-node';
import { CONDITIONS, LABELS, workspaceClaimName, type SandboxSession } from '@sandbox-platform/api';

import { SandboxClient, type ExecResult } from '../../../sdk/typescript/src/index.js';
import { kubeClients } from '../../src/framework/index.js';
import { predicate, waitFor } from '@sandbox-platform/test-support';
import { namespaceOf } from '../isolation/support.js';
import { readSession } from '../support/custom-objects.js';

export const NS = namespaceOf('e2e');
export const READY_MS = 180_000;
export const kube = kubeClients();

export function client(baseUrl = process.env.E2E_GATEWAY_URL): SandboxClient {
  const apiKey = process.env.E2E_GATEWAY_API_KEY;
  if (!baseUrl || !apiKey)
    throw new Error('needs E2E_GATEWAY_URL and E2E_GATEWAY_API_KEY (make platform-up)');
  return new SandboxClient({ baseUrl, apiKey, namespace: NS, timeoutMs: 240_000 });
}

export const sbx = client();

/** The session `name` of the e2e tenant, or undefined when there is none. */
export const session = (name: string): Promise<SandboxSession | undefined> => readSession(kube, NS, name);

export const readyReason = (s: SandboxSession | undefined): string | undefined =>
  s?.status?.conditions?.find((c) => c.type === CONDITIONS.ready)?.reason;

export async function waitReason(
  name: string,
  reason: string,
  timeoutMs = READY_MS,
): Promise<SandboxSession> {
  return (await waitFor(
    () => session(name),
    predicate(`${name} Ready reason ${reason}`, (s) => readyReason(s) === reason),
    {
      timeoutMs,
      intervalMs: 500,
    },
  ))!;
}

/** The session's Pods that are not being deleted. */
export async function pods(name: string): Promise<k8s.V1Pod[]> {
  const list = await kube.core.listNamespacedPod({
    namespace: NS,
    labelSelector: `${LABELS.session}=${name}`,
  });
  return list.items.filter((p) => !p.metadata?.deletionTimestamp);
}

/** How many Pods the session has, those being deleted included. */
export async function anyPod(name: string): Promise<number> {
  const list = await kube.core.listNamespacedPod({
    namespace: NS,
    labelSelector: `${LABELS.session}=${name}`,
  });
  return list.items.length;
}

export async function claimPhase(name: string): Promise<string | undefined> {
  const c = await kube.core.readNamespacedPersistentVolumeClaim({
    namespace: NS,
    name: workspaceClaimName(name),
  });
  return c.status?.phase;
}

export async function exec(name: string, command: string, c: SandboxClient = sbx): Promise<ExecResult> {
  return c.exec(name, { command, timeoutSeconds: 30, waitSeconds: 120 });
}
