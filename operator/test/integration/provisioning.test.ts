/**
 * Create, status and delete against a real API server: Secret then Pod with exact names, owner
 * references, labels and security context; status following Pod status; ownerReference GC.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { deriveToken, readMasterKeyFile } from '@sandbox-platform/api';

import { predicate, waitFor } from '@sandbox-platform/test-support';
import { OperatorFixture } from './harness/fixture.js';
import { masterKeyFile, type OperatorProcess } from './harness/operator-process.js';
import {
  eventReasons,
  gone,
  readPod,
  readSecret,
  readyIs,
  runningReady,
  setPodStatus,
} from './harness/sessions.js';

const fx = new OperatorFixture('op-prov');
const { kube, ns, sessions } = fx;
let op: OperatorProcess;

beforeAll(async () => {
  await fx.setup();
  op = await fx.startController();
});

afterAll(async () => {
  const code = await op?.stop('SIGTERM');
  expect(code).toBe(0);
  await fx.teardown();
});

/** Records the order in which Secrets and Pods appear in the namespace. */
async function watchCreations(
  kc: k8s.KubeConfig,
  namespace: string,
): Promise<{ seen: string[]; stop: () => void }> {
  const seen: string[] = [];
  const watch = new k8s.Watch(kc);
  const controllers = await Promise.all(
    (['secrets', 'pods'] as const).map((resource) =>
      watch.watch(
        `/api/v1/namespaces/${namespace}/${resource}`,
        {},
        (type: string, obj: k8s.KubernetesObject) => {
          if (type === 'ADDED') seen.push(`${obj.kind ?? resource}/${obj.metadata?.name ?? ''}`);
        },
        () => undefined,
      ),
    ),
  );
  return { seen, stop: () => controllers.forEach((c) => c.abort()) };
}

describe('a new SandboxSession', () => {
  it('gets its Secret, then its Pod, with exact names, owners, labels and security context', async () => {
    const watched = await watchCreations(kube.kc, ns.name);
    const created = await sessions.create('alpha', {
      execTransport: 'Agent',
      env: [{ name: 'FOO', value: 'bar' }],
    });
    const pod = await waitFor(
      () => readPod(kube.core, ns.name, 'sbs-alpha'),
      predicate('pod sbs-alpha', (p) => p !== undefined),
    );
    const secret = await readSecret(kube.core, ns.name, 'sbs-alpha-token');
    watched.stop();
    expect(watched.seen.filter((s) => s.endsWith('alpha') || s.endsWith('alpha-token'))).toEqual([
      'Secret/sbs-alpha-token',
      'Pod/sbs-alpha',
    ]);

    const uid = created.metadata.uid!;
    const owner = {
      apiVersion: 'sandbox.dev/v1alpha1',
      kind: 'SandboxSession',
      name: 'alpha',
      uid,
      controller: true,
      blockOwnerDeletion: true,
    };
    const labels = { 'app.kubernetes.io/managed-by': 'sandbox-operator', 'sandbox.dev/session': 'alpha' };
    expect(secret?.metadata?.ownerReferences).toEqual([owner]);
    expect(secret?.metadata?.labels).toEqual(labels);
    expect(secret?.metadata?.annotations?.['sandbox.dev/session-uid']).toBe(uid);
    expect(secret?.immutable).toBe(true);
    const token = Buffer.from(secret?.data?.token ?? '', 'base64').toString();
    expect(token).toBe(
      deriveToken(readMasterKeyFile(masterKeyFile()), { namespace: ns.name, name: 'alpha', uid }),
    );

    expect(pod?.metadata?.ownerReferences).toEqual([owner]);
    expect(pod?.metadata?.labels).toEqual({ ...labels, 'app.kubernetes.io/component': 'sandbox' });
    expect(pod?.spec).toMatchObject({
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 10,
      securityContext: { runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } },
    });
    const c = pod?.spec?.containers[0];
    expect(c?.securityContext).toMatchObject({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    });
    // Agent transport: spec.env reaches the agent's bash only, through SANDBOX_ENV_<name>.
    expect(c?.env?.map((e) => e.name)).toEqual(['HOME', 'SANDBOX_ENV_FOO', 'SANDBOX_TOKEN']);
    // HTTP probes as the API server stored them (it defaults the scheme).
    expect(c?.readinessProbe?.httpGet).toEqual({ path: '/healthz', port: 'agent', scheme: 'HTTP' });
    expect(c?.livenessProbe?.httpGet).toEqual({ path: '/livez', port: 'agent', scheme: 'HTTP' });
    expect(c?.ports).toEqual([{ name: 'agent', containerPort: 8090, protocol: 'TCP' }]);
    expect(c?.resources).toEqual({
      requests: { cpu: '100m', memory: '256Mi' },
      limits: { cpu: '1', memory: '1Gi' },
    });

    const s = await sessions.waitFor('alpha', readyIs('False', 'PodPending'));
    expect(s?.status).toMatchObject({
      podName: 'sbs-alpha',
      secretName: 'sbs-alpha-token',
      phase: 'Pending',
      observedGeneration: 1,
    });
  });

  it('follows the Pod status: Ready, then NotReady, then a failed Pod is replaced', async () => {
    await sessions.create('beta', { idleTimeoutSeconds: 0 });
    await waitFor(
      () => readPod(kube.core, ns.name, 'sbs-beta'),
      predicate('pod sbs-beta', (p) => p !== undefined),
    );
    await setPodStatus(kube.core, ns.name, 'sbs-beta', runningReady('198.18.3.4'));
    const readyS = await sessions.waitFor('beta', readyIs('True', 'SandboxReady'));
    expect(readyS?.status).toMatchObject({ podIP: '198.18.3.4', phase: 'Ready' });
    expect(readyS?.status?.readyTime).toBeDefined();
    expect(readyS?.status?.conditions?.find((c) => c.type === 'PodScheduled')).toMatchObject({
      status: 'True',
    });

    await setPodStatus(kube.core, ns.name, 'sbs-beta', {
      conditions: [
        { type: 'PodScheduled', status: 'True' },
        { type: 'Ready', status: 'False' },
      ],
    });
    const notReady = await sessions.waitFor('beta', readyIs('False', 'PodPending'));
    expect(notReady?.status?.readyTime).toBe(readyS?.status?.readyTime);

    const before = await readPod(kube.core, ns.name, 'sbs-beta');
    await setPodStatus(kube.core, ns.name, 'sbs-beta', {
      phase: 'Failed',
      reason: 'Evicted',
      message: 'The node was low on resource: memory.',
    });
    await waitFor(
      () => readPod(kube.core, ns.name, 'sbs-beta'),
      predicate('a new pod sbs-beta', (p) => p !== undefined && p.metadata?.uid !== before?.metadata?.uid),
    );
    // Events trail the status (they are held while work is queued, at most 5 s): wait for them.
    const reasons = await waitFor(
      () => eventReasons(kube.core, ns.name, 'beta'),
      predicate(
        '2 CreatedPod (the first naming the Secret), Ready and NotReady events',
        (r) =>
          ['Ready', 'NotReady'].every((x) => r.includes(x)) &&
          r.filter((x) => x === 'CreatedPod').length >= 2,
      ),
    );
    expect(reasons.filter((r) => r === 'CreatedPod')).toHaveLength(2);
  });

  it('loses its Pod and Secret to the garbage collector when deleted', async () => {
    await sessions.create('gamma');
    await waitFor(
      () => readPod(kube.core, ns.name, 'sbs-gamma'),
      predicate('pod sbs-gamma', (p) => p !== undefined),
    );
    await sessions.delete('gamma');
    await sessions.waitFor('gamma', gone);
    await waitFor(
      async () => [
        await readPod(kube.core, ns.name, 'sbs-gamma'),
        await readSecret(kube.core, ns.name, 'sbs-gamma-token'),
      ],
      predicate('pod and secret of gamma deleted', ([p, s]) => p === undefined && s === undefined),
      { timeoutMs: 60_000 },
    );
  });

  it('serves metrics on their own port, health and readiness on the probe port', async () => {
    expect((await op.get('/healthz')).status).toBe(200);
    expect((await op.get('/readyz')).status).toBe(200);
    const probePort = await op.httpPort();
    expect(await op.metricsPort()).not.toBe(probePort);
    expect((await fetch(`http://127.0.0.1:${probePort}/metrics`)).status).toBe(404);
    const metrics = (await op.get('/metrics')).body;
    for (const name of [
      'sandbox_operator_reconcile_duration_seconds_bucket',
      'workqueue_depth{name="sandboxsession"}',
      'workqueue_adds_total{name="sandboxsession"}',
      'workqueue_retries_total{name="sandboxsession"}',
      'workqueue_queue_duration_seconds_bucket{le="1e-8",name="sandboxsession"}',
      'workqueue_work_duration_seconds_count{name="sandboxsession"}',
      'workqueue_unfinished_work_seconds{name="sandboxsession"}',
      'workqueue_longest_running_processor_seconds{name="sandboxsession"}',
      'sandbox_operator_sessions{',
      'sandbox_operator_session_not_ready_oldest_seconds',
      'sandbox_operator_session_create_to_ready_seconds_count 1',
      'sandbox_operator_leader 1',
      'process_resident_memory_bytes',
    ]) {
      expect(metrics).toContain(name);
    }
  });

  it('never logs a token', async () => {
    const secret = await readSecret(kube.core, ns.name, 'sbs-alpha-token');
    const token = Buffer.from(secret?.data?.token ?? '', 'base64').toString();
    expect(token).toHaveLength(64);
    expect(JSON.stringify(op.lines)).not.toContain(token);
    expect(JSON.stringify(op.lines)).not.toContain(secret?.data?.token);
  });
});
