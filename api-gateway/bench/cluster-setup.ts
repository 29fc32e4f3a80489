/**
 * Cluster mode: a deployed gateway, one Ready Agent session pod (created through the gateway), the
 * same pod reached directly (podIP:8090 with its token, read from the session Secret) and through
 * pods/exec, and a second session with execTransport KubernetesExec on the same image.
 */
import { randomBytes } from 'node:crypto';

import * as k8s from '@kubernetes/client-node';
import {
  AGENT_PORT,
  GROUP,
  PLURAL,
  TOKEN_SECRET_KEY,
  VERSION,
  secretName,
  type SandboxSession,
} from '@sandbox-platform/api';

import { SandboxClient } from '@sandbox-platform/client';
import { createPodExecutor } from '../src/exec/kube/pod-executor.js';
import { KubernetesExecTransport } from '../src/exec/kube/kube-exec-transport.js';
import type { ExecTarget } from '../src/sessions/model.js';

const IMAGE = 'localhost/sandbox-platform/sandbox-agent:dev';
const READY_TIMEOUT_MS = 180_000;

/** Inputs from the environment (the e2e setup's variables by default). */
export interface ClusterInputs {
  gatewayUrl: string;
  apiKey: string;
  namespace: string;
  kubeconfig: string;
}

/** What the cluster mode measures against. */
export interface ClusterSetup {
  client: SandboxClient;
  agentSession: string;
  kexecSession: string;
  direct: { host: string; port: number; token: string };
  podExec: () => Promise<void>;
  close(): Promise<void>;
}

async function waitReady(client: SandboxClient, name: string): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    const s = await client.getSession(name);
    if (s.ready) return;
    if (Date.now() > deadline)
      throw new Error(`session ${name} not Ready after ${READY_TIMEOUT_MS} ms: ${s.reason} ${s.message}`);
    await new Promise((r) => setTimeout(r, 1000));
  }
}

export async function clusterSetup(i: ClusterInputs): Promise<ClusterSetup> {
  // Retries (the SDK's, for safe calls: 429 and 503 with Retry-After): the gateway's per-key
  // limit also counts these calls, and a 429 on the way must not end the run.
  const client = new SandboxClient({
    baseUrl: i.gatewayUrl,
    apiKey: i.apiKey,
    namespace: i.namespace,
    retry: { retries: 5 },
  });
  const suffix = randomBytes(3).toString('hex');
  const agentSession = `bench-agent-${suffix}`;
  const kexecSession = `bench-kexec-${suffix}`;
  await client.createSession({ name: agentSession, image: IMAGE, execTransport: 'Agent' });
  await client.createSession({ name: kexecSession, image: IMAGE, execTransport: 'KubernetesExec' });
  await waitReady(client, agentSession);
  await waitReady(client, kexecSession);

  const kc = new k8s.KubeConfig();
  kc.loadFromFile(i.kubeconfig);
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const cr = (await custom.getNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    namespace: i.namespace,
    plural: PLURAL,
    name: agentSession,
  })) as SandboxSession;
  const secret = await core.readNamespacedSecret({ namespace: i.namespace, name: secretName(agentSession) });
  const token = Buffer.from(secret.data?.[TOKEN_SECRET_KEY] ?? '', 'base64').toString('utf8');
  const podIP = cr.status?.podIP;
  if (!podIP || !token) throw new Error(`session ${agentSession}: no pod IP or token yet`);

  // pods/exec on the Agent session's pod, through the gateway's own KubernetesExec code path.
  const streaming = new k8s.KubeConfig();
  streaming.loadFromFile(i.kubeconfig);
  const kexec = new KubernetesExecTransport({
    executor: createPodExecutor(streaming),
    maxOutputBytes: 1 << 20,
    deadlineMarginMs: 10_000,
    fileTimeoutMs: 60_000,
  });
  const target: ExecTarget = {
    namespace: i.namespace,
    name: agentSession,
    uid: cr.metadata.uid ?? '',
    podName: cr.status?.podName ?? '',
    podIP,
    transport: 'KubernetesExec',
    idleTimeoutSeconds: cr.spec.idleTimeoutSeconds ?? 1800,
  };
  const podExec = async (): Promise<void> => {
    const r = await kexec.exec(target, { command: 'true', timeoutSeconds: 30 });
    if (r.exitCode !== 0) throw new Error(`pods/exec true exited ${r.exitCode}`);
  };
  return {
    client,
    agentSession,
    kexecSession,
    direct: { host: podIP, port: AGENT_PORT, token },
    podExec,
    close: async () => {
      // Both, even when the first fails; the first failure is reported.
      const results = await Promise.allSettled([
        client.deleteSession(agentSession),
        client.deleteSession(kexecSession),
      ]);
      const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) throw failed.reason;
    },
  };
}
