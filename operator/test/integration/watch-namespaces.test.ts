/**
 * WATCH_NAMESPACES with the Helm chart's RBAC: the operator runs as the chart's ServiceAccount
 * (token from the TokenRequest API) with only the chart's namespaced Roles (sessions, Pods,
 * Secrets and Events in the sandbox namespaces a and b; the Lease in its own namespace) and the
 * chart's pre-created empty Lease. It reconciles sessions in a and b (creates, status, collection,
 * Events), leaves c alone, logs no warning or error (a missing rule would show as a 403), and
 * shuts down cleanly with one watch per namespace.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';

import { predicate, type TestNamespace, waitFor } from '@sandbox-platform/test-support';
import { renderOperator } from './harness/chart.js';
import { OperatorFixture } from './harness/fixture.js';
import type { OperatorProcess } from './harness/operator-process.js';
import { serviceAccountKubeconfig } from './harness/service-account.js';
import {
  Sessions,
  eventReasons,
  gone,
  readPod,
  readSecret,
  readyIs,
  runningReady,
  setPodStatus,
} from './harness/sessions.js';

const fx = new OperatorFixture('op-sys');
const { kube, ns: system } = fx;
let a: TestNamespace;
let b: TestNamespace;
let c: TestNamespace;
let op: OperatorProcess;
let leaseName: string;
let kubeconfig: string;

beforeAll(async () => {
  [, a, b, c] = await Promise.all([
    fx.setup(),
    fx.namespace('op-wa'),
    fx.namespace('op-wb'),
    fx.namespace('op-wc'),
  ]);
  const version = await kube.kc.makeApiClient(k8s.VersionApi).getCode();
  const rendered = renderOperator({
    release: 'it',
    namespace: system.name,
    sandboxNamespaces: [a.name, b.name],
    kubeVersion: version.gitVersion,
  });
  leaseName = rendered.name;
  for (const obj of [...rendered.rbac, rendered.lease]) await kube.objects.create(obj);
  kubeconfig = await serviceAccountKubeconfig(kube.kc, kube.core, system.name, rendered.name);
  op = await fx.startController(
    {
      env: {
        KUBECONFIG: kubeconfig,
        WATCH_NAMESPACE: '',
        WATCH_NAMESPACES: `${a.name},${b.name}`,
        LEASE_NAME: leaseName,
      },
    },
    60_000,
  );
});

afterAll(async () => {
  await fx.teardown('SIGKILL');
});

async function provisioned(ns: TestNamespace, name: string): Promise<void> {
  await waitFor(
    async () => [
      await readSecret(kube.core, ns.name, `sbs-${name}-token`),
      await readPod(kube.core, ns.name, `sbs-${name}`),
    ],
    predicate(`Secret and Pod of ${ns.name}/${name}`, ([s, p]) => s !== undefined && p !== undefined),
  );
}

describe('WATCH_NAMESPACES=a,b under the chart RBAC', () => {
  it("runs with the chart's rights only: nothing in c, nothing cluster-wide", async () => {
    const sa = new k8s.KubeConfig();
    sa.loadFromFile(kubeconfig);
    const core = sa.makeApiClient(k8s.CoreV1Api);
    const status = (p: Promise<unknown>): Promise<number | undefined> =>
      p.then(
        () => 200,
        (err: unknown) => (err instanceof k8s.ApiException ? err.code : undefined),
      );
    expect(await status(core.listNamespacedPod({ namespace: a.name }))).toBe(200);
    expect(await status(core.listNamespacedPod({ namespace: c.name }))).toBe(403);
    expect(await status(core.listSecretForAllNamespaces())).toBe(403);
  });

  it('holds the chart-created Lease', async () => {
    const lease = await kube.kc
      .makeApiClient(k8s.CoordinationV1Api)
      .readNamespacedLease({ namespace: system.name, name: leaseName });
    expect(lease.spec?.holderIdentity).toBe(op.identity);
    expect(lease.metadata?.labels?.['app.kubernetes.io/managed-by']).toBe('Helm');
  });

  it('reconciles sessions in a and b to Ready, with their Events', async () => {
    for (const ns of [a, b]) {
      const sessions = new Sessions(kube.custom, ns.name);
      await sessions.create('one');
      await provisioned(ns, 'one');
      await setPodStatus(kube.core, ns.name, 'sbs-one', runningReady());
      await sessions.waitFor('one', readyIs('True'));
      await waitFor(
        () => eventReasons(kube.core, ns.name, 'one'),
        predicate('CreatedPod and Ready Events', (r) => ['CreatedPod', 'Ready'].every((x) => r.includes(x))),
      );
    }
  });

  it('leaves sessions in c alone', async () => {
    const sessions = new Sessions(kube.custom, c.name);
    await sessions.create('other');
    // The sessions in a and b above were provisioned within a second or two; give c as long.
    await new Promise((r) => setTimeout(r, 5_000));
    expect((await sessions.get('other'))?.status).toBeUndefined();
    expect(await readSecret(kube.core, c.name, 'sbs-other-token')).toBeUndefined();
    expect(await readPod(kube.core, c.name, 'sbs-other')).toBeUndefined();
    expect(op.lines.filter((l) => l.namespace === c.name)).toEqual([]);
  });

  it('collects in a watched namespace (Delete) and deletes children (Retain)', async () => {
    const sessions = new Sessions(kube.custom, b.name);
    await sessions.create('idle-delete', { idleTimeoutSeconds: 2, shutdownPolicy: 'Delete' });
    await sessions.create('idle-retain', { idleTimeoutSeconds: 2, shutdownPolicy: 'Retain' });
    await Promise.all([
      sessions.waitFor('idle-delete', gone, 30_000),
      sessions.waitFor('idle-retain', readyIs('False', 'IdleTimeout'), 30_000),
    ]);
    await waitFor(
      async () => [
        await readPod(kube.core, b.name, 'sbs-idle-retain'),
        await readSecret(kube.core, b.name, 'sbs-idle-retain-token'),
      ],
      predicate('children of the retained session deleted', ([p, s]) => p === undefined && s === undefined),
    );
  });

  it('logged no warning or error (no RBAC denial anywhere)', () => {
    const problems = op.lines.filter((l) => l.level === 'warn' || l.level === 'error');
    expect(problems).toEqual([]);
  });

  it('SIGTERM with one watch per namespace: drains, releases the Lease and exits 0', async () => {
    expect(await op.stop('SIGTERM')).toBe(0);
    expect(op.messages('released leader lease')).toHaveLength(1);
    const lease = await kube.kc
      .makeApiClient(k8s.CoordinationV1Api)
      .readNamespacedLease({ namespace: system.name, name: leaseName });
    expect(lease.spec?.holderIdentity).toBe('');
  });
});
