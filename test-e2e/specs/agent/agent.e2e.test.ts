/**
 * e2e: the sandbox agent image on a real node. A SandboxSession with the agent image becomes
 * Ready through the pod's HTTP readiness probe (the kubelet's GET /healthz), and a command sent to
 * <podIP>:8090 with the token from the session's Secret runs. Runs once per container runtime:
 * runc, and gVisor (spec.runtimeClassName: gvisor) where the cluster has that RuntimeClass.
 *
 * Needs KUBECONFIG (exported by the e2e globalSetup) pointing at a cluster where the CRD is
 * installed and the operator runs, the image localhost/sandbox-platform/sandbox-agent:dev present
 * on the node, and pod IPs reachable from where the test runs (true on the local single-node
 * cluster). Namespace: $E2E_NAMESPACE (default sandbox-e2e), created when missing and left in
 * place.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';

import {
  AGENT_PORT,
  API_VERSION,
  CONDITIONS,
  GROUP,
  KIND,
  PLURAL,
  podName,
  secretName,
  TOKEN_SECRET_KEY,
  VERSION,
  type SandboxSession,
} from '@sandbox-platform/api';

import {
  apiStatus,
  isNotFound,
  kubeClients,
  type KubeClients,
  predicate,
  waitFor,
} from '../../src/framework/index.js';
import { runtimesUnderTest } from '../isolation/runtimes.js';

const NAMESPACE = process.env.E2E_NAMESPACE ?? 'sandbox-e2e';
const IMAGE = 'localhost/sandbox-platform/sandbox-agent:dev';
const READY_TIMEOUT_MS = 180_000;

function isReadyWithIp(session: SandboxSession): boolean {
  const ready = session.status?.conditions?.find((c) => c.type === CONDITIONS.ready);
  return ready?.status === 'True' && Boolean(session.status?.podIP);
}

async function ensureNamespace(kube: KubeClients, name: string): Promise<void> {
  try {
    await kube.core.createNamespace({ body: { metadata: { name } } });
  } catch (err) {
    if (apiStatus(err) !== 409) throw new Error(`create namespace ${name}`, { cause: err });
  }
}

interface AgentAnswer {
  status: number;
  body: Record<string, unknown>;
}

async function callAgent(
  podIP: string,
  path: string,
  init: { token?: string; body?: object },
): Promise<AgentAnswer> {
  const host = podIP.includes(':') ? `[${podIP}]` : podIP;
  const res = await fetch(`http://${host}:${AGENT_PORT}${path}`, {
    method: init.body === undefined ? 'GET' : 'POST',
    headers: {
      ...(init.token === undefined ? {} : { authorization: `Bearer ${init.token}` }),
      ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
    signal: AbortSignal.timeout(30_000),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const RUNTIMES = await runtimesUnderTest(kubeClients().kc);

describe.each(RUNTIMES)('sandbox agent on the node ($label)', ({ runtimeClassName }) => {
  const kube = kubeClients();
  const name = `agent-e2e-${randomBytes(3).toString('hex')}`;
  let session: SandboxSession;
  let token: string;

  beforeAll(async () => {
    await ensureNamespace(kube, NAMESPACE);
    const body: SandboxSession = {
      apiVersion: API_VERSION,
      kind: KIND,
      metadata: { name, namespace: NAMESPACE },
      spec: { image: IMAGE, idleTimeoutSeconds: 600, ...(runtimeClassName ? { runtimeClassName } : {}) },
    };
    await kube.custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: NAMESPACE,
      plural: PLURAL,
      body,
    });
    session = await waitFor(
      async () =>
        (await kube.custom.getNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace: NAMESPACE,
          plural: PLURAL,
          name,
        })) as SandboxSession,
      predicate(`SandboxSession ${NAMESPACE}/${name} Ready=True with a pod IP`, isReadyWithIp),
      { timeoutMs: READY_TIMEOUT_MS, intervalMs: 250 },
    );
    const secret = await kube.core.readNamespacedSecret({ name: secretName(name), namespace: NAMESPACE });
    const encoded = secret.data?.[TOKEN_SECRET_KEY];
    if (!encoded) throw new Error(`Secret ${secretName(name)} has no "${TOKEN_SECRET_KEY}" key`);
    token = Buffer.from(encoded, 'base64').toString('utf8');
  }, READY_TIMEOUT_MS + 30_000);

  afterAll(async () => {
    try {
      await kube.custom.deleteNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace: NAMESPACE,
        plural: PLURAL,
        name,
      });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }, 60_000);

  it("became Ready through the kubelet's HTTP readiness probe (GET /healthz on the agent port)", async () => {
    const pod = await kube.core.readNamespacedPod({ name: podName(name), namespace: NAMESPACE });
    const container = pod.spec?.containers.find((c) => c.image === IMAGE);
    expect(container?.readinessProbe?.httpGet).toMatchObject({ path: '/healthz', port: 'agent' });
    expect(container?.livenessProbe?.httpGet).toMatchObject({ path: '/livez', port: 'agent' });
    expect(pod.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    expect(pod.status?.podIP).toBe(session.status?.podIP);
    expect(pod.spec?.runtimeClassName).toBe(runtimeClassName);
  });

  it('runs `echo hello` through the pod IP with the session token', async () => {
    const res = await callAgent(session.status?.podIP ?? '', '/v1/exec', {
      token,
      body: { command: 'echo hello' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ stdout: 'hello\n', stderr: '', exitCode: 0, timedOut: false });
  }, 60_000);

  it('refuses a call without the token and serves /healthz without it', async () => {
    const podIP = session.status?.podIP ?? '';
    expect((await callAgent(podIP, '/v1/exec', { body: { command: 'echo hello' } })).status).toBe(401);
    expect(await callAgent(podIP, '/healthz', {})).toEqual({ status: 200, body: { status: 'ok' } });
  }, 60_000);

  it('runs as a non-root user with the workspace as a writable home', async () => {
    const res = await callAgent(session.status?.podIP ?? '', '/v1/exec', {
      token,
      body: { command: 'id -u; echo "$HOME"; pwd; touch probe-file && echo writable' },
    });
    expect(res.body).toMatchObject({ stdout: '1000\n/workspace\n/workspace\nwritable\n', exitCode: 0 });
  }, 60_000);
});
