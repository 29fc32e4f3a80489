/**
 * The chart's sandbox ResourceQuota against the real operator and a real API server (its quota
 * admission and the controller manager's quota controller):
 *
 * - with the chart's default values a session of the default size fits (its Pod carries requests
 *   and limits of CPU and memory, which the quota requires);
 * - a Pod the quota refuses leaves its session Ready=False/QuotaExceeded with the API server's
 *   message and a Warning event, the operator keeps running (no crash loop) and logs a warning,
 *   and the session provisions on its own once the quota has room;
 * - a session naming requests without limits (or limits without requests) gets its Pod under
 *   that quota, which requires both (issue 25: it was refused "must specify limits.memory" and
 *   stayed QuotaExceeded): the operator fills the missing side, never below the other one.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import type { SandboxSession } from '@sandbox-platform/api';

import { predicate, REPO_ROOT, waitFor } from '@sandbox-platform/test-support';
import { helmBinary } from './harness/chart.js';
import { OperatorFixture } from './harness/fixture.js';
import type { OperatorProcess } from './harness/operator-process.js';
import { eventReasons, gone, ready, readPod, readyIs } from './harness/sessions.js';

const fx = new OperatorFixture('op-quota');
const { kube, ns, sessions } = fx;
let op: OperatorProcess;
let kubeVersion: string;

/** The chart's ResourceQuota for the suite's namespace, rendered with these extra values. */
function renderQuota(sets: string[] = []): k8s.V1ResourceQuota {
  const args = [
    'template',
    'it',
    join(REPO_ROOT, 'charts/sandbox-platform'),
    '--namespace',
    'op-quota-system',
  ];
  args.push('--kube-version', kubeVersion, '--show-only', 'templates/sandbox-quota.yaml');
  for (const s of [
    `sandboxNamespaces={${ns.name}}`,
    'apiKeys.keys[0].id=it',
    `apiKeys.keys[0].sha256=${'0'.repeat(64)}`,
    `apiKeys.keys[0].namespaces[0]=${ns.name}`,
    ...sets,
  ])
    args.push('--set', s);
  const res = spawnSync(helmBinary(), args, { encoding: 'utf8' });
  if (res.status !== 0) throw new Error(`helm template failed:\n${res.stderr}`);
  const docs = (k8s.loadAllYaml(res.stdout) as Array<k8s.KubernetesObject | null>).filter((d) => d !== null);
  const quota = docs.find((d) => d?.kind === 'ResourceQuota');
  if (!quota) throw new Error('the chart rendered no ResourceQuota');
  return quota;
}

/** Applies the quota and waits until the quota controller has computed its usage (admission needs it). */
async function applyQuota(quota: k8s.V1ResourceQuota): Promise<void> {
  const name = quota.metadata?.name ?? '';
  const existing = await kube.core
    .readNamespacedResourceQuota({ namespace: ns.name, name })
    .catch(() => undefined);
  if (existing) {
    const body = {
      ...quota,
      metadata: { ...quota.metadata, resourceVersion: existing.metadata?.resourceVersion },
    };
    await kube.core.replaceNamespacedResourceQuota({ namespace: ns.name, name, body });
  } else {
    await kube.core.createNamespacedResourceQuota({ namespace: ns.name, body: quota });
  }
  const want = quota.spec?.hard ?? {};
  await waitFor(
    () => kube.core.readNamespacedResourceQuota({ namespace: ns.name, name }),
    predicate('quota status computed for the current spec', (q) =>
      Object.entries(want).every(([k, v]) => q.status?.hard?.[k] === v && q.status?.used?.[k] !== undefined),
    ),
    { timeoutMs: 60_000 },
  );
}

const quotaExceeded = readyIs('False', 'QuotaExceeded');

beforeAll(async () => {
  await fx.setup();
  kubeVersion = (await kube.kc.makeApiClient(k8s.VersionApi).getCode()).gitVersion;
  await applyQuota(renderQuota());
  op = await fx.startController();
});

afterAll(async () => {
  const code = await op?.stop('SIGTERM');
  expect(code).toBe(0);
  await fx.teardown();
});

describe('the chart sandbox ResourceQuota', () => {
  it('with the default values, a session of the default size gets its Pod (requests and limits set)', async () => {
    await sessions.create('fits');
    const pod = await waitFor(
      () => readPod(kube.core, ns.name, 'sbs-fits'),
      predicate('pod sbs-fits', (p) => p !== undefined),
    );
    const resources = pod?.spec?.containers[0]?.resources;
    expect(Object.keys(resources?.requests ?? {}).sort()).toEqual(['cpu', 'memory']);
    expect(Object.keys(resources?.limits ?? {}).sort()).toEqual(['cpu', 'memory']);
    await sessions.waitFor('fits', readyIs('False', 'PodPending'));
  });

  it('a Pod over the quota: QuotaExceeded with the quota named, a Warning event, the operator keeps running', async () => {
    await applyQuota(renderQuota(['sandboxQuota.pods=1']));
    await sessions.create('over');
    const s = (await sessions.waitFor('over', quotaExceeded)) as SandboxSession;
    const message = ready(s)?.message ?? '';
    expect(message).toMatch(/^Pod sbs-over was refused by a ResourceQuota: /);
    expect(message).toContain('exceeded quota: it-sandbox-platform-sandboxes');
    expect(message).toContain('limited: pods=1');
    expect(s.status?.phase).toBe('Pending');
    await waitFor(
      () => eventReasons(kube.core, ns.name, 'over'),
      predicate('QuotaExceeded event', (r) => r.includes('QuotaExceeded')),
    );
    expect(await readPod(kube.core, ns.name, 'sbs-over')).toBeUndefined();
    // Retried with backoff: several refusals logged as warnings, never an error, no exit.
    await op.waitForLog(
      (l) => l.message === 'refused by a ResourceQuota; retrying' && Number(l.attempt) >= 2,
    );
    expect(op.lines.filter((l) => l.level === 'error')).toEqual([]);
    expect(await Promise.race([op.exited, new Promise((r) => setTimeout(() => r('running'), 100))])).toBe(
      'running',
    );
  });

  it('provisions the waiting session once the quota has room', async () => {
    await sessions.delete('fits');
    await sessions.waitFor('fits', gone);
    // The garbage collector deletes the Pod, the quota controller frees its slot, the backoff retries.
    await sessions.waitFor('over', readyIs('False', 'PodPending'), 120_000);
    expect(await readPod(kube.core, ns.name, 'sbs-over')).toBeDefined();
  });

  it('requests without limits, or limits without requests: the Pod is admitted, the missing side filled', async () => {
    await applyQuota(renderQuota());
    await sessions.create('requests-only', { resources: { requests: { cpu: '250m', memory: '2Gi' } } });
    await sessions.create('limits-only', { resources: { limits: { cpu: '50m', memory: '512Mi' } } });
    for (const name of ['requests-only', 'limits-only'])
      await sessions.waitFor(name, readyIs('False', 'PodPending'), 60_000);
    const resources = async (name: string) =>
      (await readPod(kube.core, ns.name, `sbs-${name}`))?.spec?.containers[0]?.resources;
    // Operator defaults of the suite: requests 100m / 256Mi, limits 1 / 1Gi.
    expect(await resources('requests-only')).toEqual({
      requests: { cpu: '250m', memory: '2Gi' },
      limits: { cpu: '1', memory: '2Gi' },
    });
    expect(await resources('limits-only')).toEqual({
      requests: { cpu: '50m', memory: '256Mi' },
      limits: { cpu: '50m', memory: '512Mi' },
    });
  });
});
