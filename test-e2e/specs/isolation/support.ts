/**
 * Helpers of the isolation e2e specs, shared with other spec folders: the gateway client of a
 * tenant, sessions created through the Kubernetes API (so a spec can ask for a RuntimeClass, which
 * the gateway API does not take), and the runtimes the runtime-parameterized specs run under. The
 * connection matrix is matrix.ts, its probe places places.ts, the stand-ins standins.ts.
 */
import { randomBytes } from 'node:crypto';

import * as k8s from '@kubernetes/client-node';
import {
  ANNOTATIONS,
  API_VERSION,
  CONDITIONS,
  GROUP,
  KIND,
  PLURAL,
  VERSION,
  type SandboxSession,
} from '@sandbox-platform/api';

import { SandboxClient } from '@sandbox-platform/client';
import { isNotFound, type KubeClients } from '../../src/framework/index.js';
import { predicate, waitFor } from '@sandbox-platform/test-support';

export const AGENT_IMAGE = 'localhost/sandbox-platform/sandbox-agent:dev';
export const READY_TIMEOUT_MS = 180_000;
/** The RuntimeClass localkube registers for gVisor (test-e2e/localkube/gvisor.go). */
export const GVISOR = 'gvisor';
/** The RuntimeClass localkube registers for runc, the opt-out where gVisor is the platform default. */
export const RUNC = 'runc';

/** A gateway client for one tenant: E2E_GATEWAY_API_KEY (E2E_NAMESPACE) or E2E_OTHER_API_KEY. */
export function gatewayClient(tenant: 'e2e' | 'other' = 'e2e'): SandboxClient {
  const baseUrl = process.env.E2E_GATEWAY_URL;
  const apiKey = tenant === 'e2e' ? process.env.E2E_GATEWAY_API_KEY : process.env.E2E_OTHER_API_KEY;
  if (!baseUrl || !apiKey) {
    throw new Error(
      'isolation specs need E2E_GATEWAY_URL, E2E_GATEWAY_API_KEY and E2E_OTHER_API_KEY (make platform-up writes them)',
    );
  }
  return new SandboxClient({ baseUrl, apiKey, namespace: namespaceOf(tenant), retry: { retries: 0 } });
}

export function namespaceOf(tenant: 'e2e' | 'other'): string {
  return tenant === 'e2e'
    ? (process.env.E2E_NAMESPACE ?? 'sandbox-e2e')
    : (process.env.E2E_OTHER_NAMESPACE ?? 'sandbox-e2e-other');
}

/** A unique session name with a readable prefix. */
export const uniqueName = (prefix: string): string => `${prefix}-${randomBytes(3).toString('hex')}`;

/** What a spec asks of a session it creates. */
export interface SessionOptions {
  runtimeClassName?: string;
  execTransport?: 'Agent' | 'KubernetesExec';
  workspace?: SandboxSession['spec']['workspace'];
}

/**
 * Creates a SandboxSession through the Kubernetes API, as the gateway would (same annotation of
 * the creating key), and waits until it is Ready with a pod IP. Returns the session.
 */
export async function createSession(
  kube: KubeClients,
  namespace: string,
  name: string,
  opts: SessionOptions = {},
): Promise<SandboxSession> {
  const body: SandboxSession = {
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: { name, namespace, annotations: { [ANNOTATIONS.createdByKey]: 'e2e' } },
    spec: { image: AGENT_IMAGE, idleTimeoutSeconds: 1800, ...opts },
  };
  await kube.custom.createNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    namespace,
    plural: PLURAL,
    body,
  });
  return waitFor(
    async () =>
      (await kube.custom.getNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace,
        plural: PLURAL,
        name,
      })) as SandboxSession,
    predicate(`SandboxSession ${namespace}/${name} Ready=True with a pod IP`, (s: SandboxSession) => {
      const ready = s.status?.conditions?.find((c) => c.type === CONDITIONS.ready);
      return ready?.status === 'True' && Boolean(s.status?.podIP);
    }),
    { timeoutMs: READY_TIMEOUT_MS, intervalMs: 250 },
  );
}

/** Deletes a session; a session already gone is fine. */
export async function deleteSession(kube: KubeClients, namespace: string, name: string): Promise<void> {
  try {
    await kube.custom.deleteNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace,
      plural: PLURAL,
      name,
    });
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}

/** Whether the cluster has the RuntimeClass (any cluster may lack gVisor). */
export async function hasRuntimeClass(kc: k8s.KubeConfig, name: string): Promise<boolean> {
  try {
    await kc.makeApiClient(k8s.NodeV1Api).readRuntimeClass({ name });
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
}

/** A container runtime the runtime-parameterized specs run under. */
export interface RuntimeUnderTest {
  /** Label in test names. */
  label: string;
  /** spec.runtimeClassName of the sessions (none: the platform's default). */
  runtimeClassName?: string;
}

/**
 * The runtimeClassName that asks for runc: `runc` where the cluster has that RuntimeClass (the
 * platform may default to gVisor; the namespace's policy must then allow runc), else none (the
 * node's default runtime, runc, on a cluster without RuntimeClasses for it).
 */
export async function runcRuntimeClass(kc: k8s.KubeConfig): Promise<string | undefined> {
  return (await hasRuntimeClass(kc, RUNC)) ? RUNC : undefined;
}

/**
 * Why the cluster cannot run gVisor sessions (E2E_GVISOR=0, or no RuntimeClass gvisor), or
 * undefined when it can.
 */
export async function gvisorUnavailable(kc: k8s.KubeConfig): Promise<string | undefined> {
  if (process.env.E2E_GVISOR === '0') return 'gVisor switched off (E2E_GVISOR=0)';
  if (!(await hasRuntimeClass(kc, GVISOR))) return `the cluster has no RuntimeClass ${GVISOR}`;
  return undefined;
}
