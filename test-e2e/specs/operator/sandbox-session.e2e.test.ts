/**
 * e2e: the operator on a real node. A SandboxSession becomes Ready with a real Pod; kubectl shows
 * the printer columns, `kubectl wait --for=condition=Ready` returns, `kubectl describe` lists the
 * operator's Events; orphaned processes in the Pod are reaped (pause is PID 1); deleting the
 * session removes its Pod and Secret.
 *
 * Needs KUBECONFIG pointing at a cluster with the CRD installed and the operator running (the e2e
 * setup deploys it), and an image on the node: the agent image when present (execTransport Agent),
 * else the testbox image with execTransport KubernetesExec. Namespace: $E2E_NAMESPACE (default
 * sandbox-e2e), created when missing and left in place. kubectl: .localkube/bin/kubectl when
 * present, else `kubectl` from PATH.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

import {
  API_VERSION,
  CONDITIONS,
  GROUP,
  KIND,
  PLURAL,
  SANDBOX_CONTAINER,
  VERSION,
  podName,
  secretName,
  type SandboxSession,
  type SandboxSessionSpec,
} from '@sandbox-platform/api';

import {
  apiStatus,
  isNotFound,
  kubeClients,
  predicate,
  REPO_ROOT,
  waitFor,
} from '@sandbox-platform/test-support';

const run = promisify(execFile);
const NAMESPACE = process.env.E2E_NAMESPACE ?? 'sandbox-e2e';
const AGENT_IMAGE = 'localhost/sandbox-platform/sandbox-agent:dev';
const TESTBOX_IMAGE = 'localhost/sandbox-platform/testbox:dev';
const READY_TIMEOUT_MS = 180_000;

const kube = kubeClients();
const name = `op-e2e-${randomBytes(3).toString('hex')}`;

function kubectlPath(): string {
  const local = join(process.env.LOCALKUBE_DIR ?? join(REPO_ROOT, '.localkube'), 'bin', 'kubectl');
  return existsSync(local) ? local : 'kubectl';
}

async function kubectl(...args: string[]): Promise<string> {
  const { stdout } = await run(kubectlPath(), ['-n', NAMESPACE, ...args], {
    env: process.env,
    timeout: 150_000,
  });
  return stdout;
}

async function getSession(): Promise<SandboxSession | undefined> {
  try {
    return (await kube.custom.getNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      plural: PLURAL,
      namespace: NAMESPACE,
      name,
    })) as SandboxSession;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

async function absentIfNotFound<T>(read: Promise<T>): Promise<T | undefined> {
  try {
    return await read;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/** The agent image if a node has it, else the testbox image without the agent. */
async function sessionSpec(): Promise<SandboxSessionSpec> {
  const nodes = await kube.core.listNode();
  const hasAgent = nodes.items.some((n) =>
    (n.status?.images ?? []).some((img) => (img.names ?? []).includes(AGENT_IMAGE)),
  );
  return hasAgent
    ? { image: AGENT_IMAGE, execTransport: 'Agent', idleTimeoutSeconds: 600 }
    : { image: TESTBOX_IMAGE, execTransport: 'KubernetesExec', idleTimeoutSeconds: 600 };
}

beforeAll(async () => {
  try {
    await kube.core.createNamespace({ body: { metadata: { name: NAMESPACE } } });
  } catch (err) {
    if (apiStatus(err) !== 409) throw new Error(`create namespace ${NAMESPACE}`, { cause: err });
  }
  const spec = await sessionSpec();
  await kube.custom.createNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    plural: PLURAL,
    namespace: NAMESPACE,
    body: { apiVersion: API_VERSION, kind: KIND, metadata: { name }, spec },
  });
  // A clear message when nothing reconciles at all.
  await waitFor(
    getSession,
    predicate('the operator to write status (is the operator running?)', (s) =>
      Boolean(s?.status?.conditions?.length),
    ),
    { timeoutMs: 60_000 },
  );
});

afterAll(async () => {
  try {
    await kube.custom.deleteNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      plural: PLURAL,
      namespace: NAMESPACE,
      name,
    });
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
});

describe('a SandboxSession on a real node', () => {
  it(
    'becomes Ready with a running Pod and its IP',
    async () => {
      const s = await waitFor(
        getSession,
        predicate('Ready=True with a pod IP', (x) => {
          const ready = x?.status?.conditions?.find((c) => c.type === CONDITIONS.ready);
          return ready?.status === 'True' && Boolean(x?.status?.podIP);
        }),
        { timeoutMs: READY_TIMEOUT_MS, intervalMs: 250 },
      );
      const pod = await kube.core.readNamespacedPod({ namespace: NAMESPACE, name: podName(name) });
      expect(pod.status?.phase).toBe('Running');
      expect(pod.status?.podIP).toBe(s?.status?.podIP);
      expect(s?.status).toMatchObject({
        podName: podName(name),
        secretName: secretName(name),
        phase: 'Ready',
        nodeName: pod.spec?.nodeName,
      });
      expect(s?.status?.conditions?.find((c) => c.type === CONDITIONS.podScheduled)?.status).toBe('True');
    },
    READY_TIMEOUT_MS + 30_000,
  );

  it('`kubectl wait --for=condition=Ready` returns', async () => {
    const out = await kubectl('wait', '--for=condition=Ready', `sandboxsession/${name}`, '--timeout=120s');
    expect(out).toMatch(/condition met/);
  });

  it('`kubectl get sbs` shows the printer columns', async () => {
    const out = await kubectl('get', 'sbs', name);
    const [header, row] = out.trim().split('\n');
    expect(header?.split(/\s{2,}/)).toEqual([
      'NAME',
      'READY',
      'REASON',
      'POD IP',
      'LAST ACTIVITY',
      'EXPIRES',
      'SUSPEND',
      'AGE',
    ]);
    expect(row).toMatch(
      new RegExp(
        `^${name}\\s+True\\s+SandboxReady\\s+\\d+\\.\\d+\\.\\d+\\.\\d+\\s+.*\\d{4}-\\d{2}-\\d{2}T.*\\s+false\\s+\\S+$`,
      ),
    );
    const wide = await kubectl('get', 'sandboxsessions', name, '-o', 'wide');
    expect(wide.split('\n')[0]).toMatch(/PHASE\s+POD\s+NODE/);
  });

  it('`kubectl describe` shows the Events', async () => {
    const out = await kubectl('describe', 'sandboxsession', name);
    expect(out).toMatch(/Events:/);
    for (const reason of ['CreatedPod', 'Ready']) expect(out).toContain(reason);
    // One Event for both children: the Pod's names the token Secret created with it.
    expect(out).toMatch(
      new RegExp(`CreatedPod .*Created Pod sbs-${name} and its token Secret sbs-${name}-token`),
    );
  });

  it('reaps orphaned processes: the Pod shares one process namespace, with pause as PID 1', async () => {
    // The inner bash exits at once, orphaning its background sleep; when the sleep ends a second
    // later, only PID 1 can reap it. The entrypoint (node for the agent) would leave a zombie.
    const script =
      'bash -c "sleep 1 &"; sleep 3; cat /proc/1/comm; ' +
      'for f in /proc/[0-9]*/stat; do cat "$f" 2>/dev/null && echo; done';
    const out = await kubectl('exec', podName(name), '-c', SANDBOX_CONTAINER, '--', 'bash', '-c', script);
    const [pid1, ...stats] = out.trim().split('\n');
    // /proc/<pid>/stat: "pid (comm) state ..."; comm may hold spaces, so read after the last ')'.
    const zombies = stats.filter((line) => line.slice(line.lastIndexOf(')') + 2).startsWith('Z'));
    expect(zombies).toEqual([]);
    expect(pid1).toBe('pause');
  });

  it('deleting the session removes its Pod and Secret', async () => {
    await kube.custom.deleteNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      plural: PLURAL,
      namespace: NAMESPACE,
      name,
    });
    await waitFor(
      async () => {
        const [pod, secret] = await Promise.all([
          absentIfNotFound(kube.core.readNamespacedPod({ namespace: NAMESPACE, name: podName(name) })),
          absentIfNotFound(kube.core.readNamespacedSecret({ namespace: NAMESPACE, name: secretName(name) })),
        ]);
        return pod === undefined && secret === undefined;
      },
      predicate('pod and secret deleted', (gone: boolean) => gone),
      { timeoutMs: 120_000, intervalMs: 250 },
    );
  });
});
