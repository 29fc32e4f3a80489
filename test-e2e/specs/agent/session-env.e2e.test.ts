/**
 * e2e: a session's env steers the user's shell, never the agent (issue 11, point 5). A
 * SandboxSession whose spec.env holds variables that would break or hijack the agent's own node
 * process (NODE_OPTIONS requiring a missing module, LD_PRELOAD of a missing
 * library, NODE_PATH, BASH_ENV) becomes Ready through the operator, and commands see every value
 * under its own name. The Pod carries them as SANDBOX_ENV_<name> (the operator's Pod builder);
 * the agent exports them in its bash only.
 *
 * Before the change, spec.env was the container's env: node refused to start with
 * `--require /nonexistent`, so this session never became Ready.
 *
 * Needs the same cluster as agent.e2e.test.ts: KUBECONFIG with the CRD installed and the
 * operator running, the image localhost/sandbox-platform/sandbox-agent:dev on the node, pod IPs
 * reachable from the test. Namespace: $E2E_NAMESPACE (default sandbox-e2e).
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
  SANDBOX_CONTAINER,
  secretName,
  SESSION_ENV_PREFIX,
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

const NAMESPACE = process.env.E2E_NAMESPACE ?? 'sandbox-e2e';
const IMAGE = 'localhost/sandbox-platform/sandbox-agent:dev';
const READY_TIMEOUT_MS = 180_000;

/** The session's env: the first four would break or steer a node process that received them. */
const SESSION_ENV = [
  { name: 'NODE_OPTIONS', value: '--require /nonexistent-sbx-module' },
  { name: 'LD_PRELOAD', value: '/nonexistent-sbx.so' },
  { name: 'NODE_PATH', value: '/workspace/hijack' },
  { name: 'BASH_ENV', value: '/workspace/bash-env.sh' },
  { name: 'GREETING', value: "hello 'quoted' $world" },
];

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

interface ExecAnswer {
  status: number;
  body: { stdout?: string; stderr?: string; exitCode?: number };
}

async function exec(podIP: string, token: string, command: string): Promise<ExecAnswer> {
  const host = podIP.includes(':') ? `[${podIP}]` : podIP;
  const res = await fetch(`http://${host}:${AGENT_PORT}/v1/exec`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ command }),
    signal: AbortSignal.timeout(30_000),
  });
  return { status: res.status, body: (await res.json()) as ExecAnswer['body'] };
}

describe('session env on the node', () => {
  const kube = kubeClients();
  const name = `env-e2e-${randomBytes(3).toString('hex')}`;
  let podIP: string;
  let token: string;

  beforeAll(async () => {
    await ensureNamespace(kube, NAMESPACE);
    const body: SandboxSession = {
      apiVersion: API_VERSION,
      kind: KIND,
      metadata: { name, namespace: NAMESPACE },
      spec: { image: IMAGE, idleTimeoutSeconds: 600, env: SESSION_ENV },
    };
    await kube.custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: NAMESPACE,
      plural: PLURAL,
      body,
    });
    const session = await waitFor(
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
    podIP = session.status?.podIP ?? '';
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

  it('became Ready: the agent and its probes started despite the env; the Pod carries it as SANDBOX_ENV_*', async () => {
    const pod = await kube.core.readNamespacedPod({ name: podName(name), namespace: NAMESPACE });
    const container = pod.spec?.containers.find((c) => c.image === IMAGE);
    const names = (container?.env ?? []).map((e) => e.name);
    for (const { name: variable } of SESSION_ENV) {
      expect(names).toContain(SESSION_ENV_PREFIX + variable);
      expect(names).not.toContain(variable);
    }
    // The probes are the kubelet's own HTTP requests to the agent: no process of the Pod's env runs them.
    expect(container?.livenessProbe?.httpGet).toMatchObject({ path: '/livez', port: 'agent' });
    expect(container?.readinessProbe?.httpGet).toMatchObject({ path: '/healthz', port: 'agent' });
    expect(pod.status?.containerStatuses?.find((c) => c.name === SANDBOX_CONTAINER)).toMatchObject({
      ready: true,
      restartCount: 0,
    });
  });

  it('gives every value to the user shell under its own name, and no carrier', async () => {
    const res = await exec(
      podIP,
      token,
      'printf "%s\\n" "$NODE_OPTIONS" "$LD_PRELOAD" "$NODE_PATH" "$BASH_ENV" "$GREETING"; env | grep -c "^SANDBOX_ENV_" || true',
    );
    expect(res.status).toBe(200);
    expect(res.body.stdout).toBe(`${SESSION_ENV.map((e) => e.value).join('\n')}\n0\n`);
  }, 60_000);

  it('reaches the processes commands start: node in the shell gets the user NODE_OPTIONS', async () => {
    const res = await exec(podIP, token, 'node -e 1 2>&1 | grep -q "nonexistent-sbx-module" && echo steered');
    expect(res.body.stdout).toBe('steered\n');
  }, 60_000);

  it('never reached the agent process: its environment has the carriers, not the names', async () => {
    // The agent is the node process serving (no arguments; probes run with `probe`);
    // /proc/<pid>/environ is the environment it started with.
    const res = await exec(
      podIP,
      token,
      [
        'pid=$(pgrep -fx "/usr/bin/node /opt/sandbox-agent/agent.mjs")',
        'tr "\\0" "\\n" < /proc/$pid/environ | grep -E "^(SANDBOX_ENV_)?(NODE_OPTIONS|LD_PRELOAD|NODE_PATH|BASH_ENV)=" | cut -d= -f1 | sort',
      ].join('; '),
    );
    expect(res.body.stdout).toBe(
      [
        'SANDBOX_ENV_BASH_ENV',
        'SANDBOX_ENV_LD_PRELOAD',
        'SANDBOX_ENV_NODE_OPTIONS',
        'SANDBOX_ENV_NODE_PATH',
        '',
      ].join('\n'),
    );
  }, 60_000);
});
