/**
 * e2e (issue 25): a tenant with only the built-in `edit` role in its namespace, using kubectl
 * (impersonation), as a platform team onboards one (docs/tenants.md):
 *
 * - it can apply, list and delete its SandboxSessions and SandboxPools (the chart's aggregated
 *   ClusterRoles extend `edit`), and cannot write their status;
 * - policy is enforced by the API server itself: a session or pool with a forbidden image, runtime
 *   class, node selector or toleration is refused with the rule's message; the gateway refuses
 *   the forbidden image with a 403 problem carrying the same message;
 * - secure by default: a session that names no runtime class runs under gVisor (`uname -r`);
 *   asking for runc where policy forbids it is refused;
 * - a session that sets resource requests only (no limits) becomes Ready under the namespace's
 *   ResourceQuota (which requires limits).
 *
 * Needs the platform on a cluster with the gVisor RuntimeClass (make platform-up).
 */
import { randomBytes } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  API_VERSION,
  CONDITIONS,
  KIND,
  POOL_KIND,
  type SandboxPool,
  type SandboxSession,
} from '@sandbox-platform/api';

import { GatewayError } from '@sandbox-platform/client';
import { kubeClients } from '../../src/framework/index.js';
import { predicate, waitFor } from '@sandbox-platform/test-support';
import {
  AGENT_IMAGE,
  deleteSession,
  gatewayClient,
  GVISOR,
  hasRuntimeClass,
  namespaceOf,
} from '../isolation/support.js';
import { readSession } from '../support/custom-objects.js';
import { grantEdit, kubectlAs, tenantUser } from './support.js';

// The other tenant's namespace keeps the chart's default policy (the e2e tenant's also admits runc
// and the test images: mk/platform.mk).
const NS = namespaceOf('other');
const READY_MS = 180_000;
const kube = kubeClients();
const suffix = randomBytes(3).toString('hex');
const FORBIDDEN_IMAGE = 'registry.invalid/miner/xmrig:latest';

const session = (name: string, spec: SandboxSession['spec'] = {}): SandboxSession => ({
  apiVersion: API_VERSION,
  kind: KIND,
  metadata: { name, namespace: NS },
  spec,
});

const pool = (name: string, spec: SandboxPool['spec']): SandboxPool => ({
  apiVersion: API_VERSION,
  kind: POOL_KIND,
  metadata: { name, namespace: NS },
  spec,
});

/** What a forbidden spec asks for, the field its refusal must name, and the value. */
const FORBIDDEN: Array<[string, SandboxSession['spec'], string, string]> = [
  ['an image off the allowlist', { image: FORBIDDEN_IMAGE }, 'image', FORBIDDEN_IMAGE],
  ['the runc runtime class', { runtimeClassName: 'runc' }, 'runtimeClassName', 'runc'],
  [
    'a node selector',
    { nodeSelector: { 'kubernetes.io/hostname': 'pinned' } },
    'nodeSelector',
    'kubernetes.io/hostname',
  ],
  [
    'a toleration',
    {
      tolerations: [
        { key: 'node-role.kubernetes.io/control-plane', operator: 'Exists', effect: 'NoSchedule' },
      ],
    },
    'tolerations',
    'node-role.kubernetes.io/control-plane',
  ],
];

describe('a tenant with the built-in edit role, through kubectl', () => {
  const tenant = tenantUser('tenant');
  let revoke: (() => Promise<void>) | undefined;
  const created: string[] = [];

  beforeAll(async () => {
    revoke = await grantEdit(kube, NS, tenant);
  });

  afterAll(async () => {
    for (const name of created) await deleteSession(kube, NS, name);
    await revoke?.();
  });

  it('applies, lists and deletes its sessions and pools, and cannot write their status', async () => {
    const name = `tenant-${suffix}`;
    const applied = await kubectlAs(
      tenant,
      ['apply', '-f', '-'],
      JSON.stringify(session(name, { idleTimeoutSeconds: 600 })),
    );
    expect({ status: applied.status, stderr: applied.stderr }).toEqual({ status: 0, stderr: '' });
    created.push(name);

    const listed = await kubectlAs(tenant, ['get', 'sandboxsessions', '-n', NS, '-o', 'name']);
    expect(listed.status).toBe(0);
    expect(listed.stdout).toContain(`sandboxsession.sandbox.dev/${name}`);

    const status = await kubectlAs(tenant, [
      'patch',
      'sandboxsession',
      name,
      '-n',
      NS,
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({ status: { podIP: '10.0.0.1' } }),
    ]);
    expect(status.status).not.toBe(0);
    expect(status.stderr).toMatch(/forbidden/i);

    const poolName = `tenant-pool-${suffix}`;
    const p = await kubectlAs(
      tenant,
      ['apply', '-f', '-'],
      JSON.stringify(pool(poolName, { replicas: 0, template: {} })),
    );
    expect({ status: p.status, stderr: p.stderr }).toEqual({ status: 0, stderr: '' });
    const poolStatus = await kubectlAs(tenant, [
      'patch',
      'sandboxpool',
      poolName,
      '-n',
      NS,
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({ status: { available: 99 } }),
    ]);
    expect(poolStatus.stderr).toMatch(/forbidden/i);
    expect((await kubectlAs(tenant, ['delete', 'sandboxpool', poolName, '-n', NS])).status).toBe(0);
    expect(
      (await kubectlAs(tenant, ['delete', 'sandboxsession', name, '-n', NS, '--wait=false'])).status,
    ).toBe(0);
  });

  it.each(FORBIDDEN)(
    'refuses a session asking for %s, naming the rule',
    async (_what, spec, field, value) => {
      const res = await kubectlAs(
        tenant,
        ['apply', '-f', '-'],
        JSON.stringify(session(`forbidden-${suffix}`, spec)),
      );
      expect(res.status).not.toBe(0);
      expect(res.stderr).toContain('denied request');
      expect(res.stderr).toContain(field);
      expect(res.stderr).toContain(value);
    },
  );

  it.each(FORBIDDEN)(
    'refuses a pool (namespace default or not) asking for %s',
    async (_what, spec, field, value) => {
      for (const namespaceDefault of [false, true]) {
        const body = pool(`forbidden-pool-${suffix}`, {
          replicas: 1,
          namespaceDefault,
          template: spec,
        });
        const res = await kubectlAs(tenant, ['apply', '-f', '-'], JSON.stringify(body));
        expect(res.status).not.toBe(0);
        expect(res.stderr).toContain('denied request');
        expect(res.stderr).toContain(field);
        expect(res.stderr).toContain(value);
      }
    },
  );

  it('the gateway refuses the forbidden image with a 403 problem carrying the same reason', async () => {
    const res = await kubectlAs(
      tenant,
      ['apply', '-f', '-'],
      JSON.stringify(session(`forbidden-${suffix}`, { image: FORBIDDEN_IMAGE })),
    );
    const admission = res.stderr;
    let err: unknown;
    try {
      await gatewayClient('other').createSession({ name: `gw-forbidden-${suffix}`, image: FORBIDDEN_IMAGE });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(GatewayError);
    const g = err as GatewayError;
    expect(g.status).toBe(403);
    expect(g.code).toBe('policy-violation');
    // The same rule and message as the API server gave kubectl.
    const rule = /denied request: (.*)$/m.exec(admission)?.[1]?.trim();
    expect(rule).toBeTruthy();
    expect(g.detail).toContain(rule!.slice(0, 80));
  });

  it(
    'a session that names no runtime class runs under gVisor',
    async () => {
      if (!(await hasRuntimeClass(kube.kc, GVISOR)))
        throw new Error('this cluster has no gVisor RuntimeClass: the default cannot be checked');
      const name = `default-rt-${suffix}`;
      const client = gatewayClient('other');
      await client.createSession({ name });
      created.push(name);
      await client.waitUntilReady(name, { timeoutMs: READY_MS });
      const s = await readSession(kube, NS, name);
      const pod = await kube.core.readNamespacedPod({ namespace: NS, name: s!.status!.podName! });
      expect(pod.spec?.runtimeClassName).toBe(GVISOR);
      const uname = await client.exec(name, { command: 'uname -r' });
      expect(uname.stdout).toMatch(/gvisor/);
    },
    READY_MS + 60_000,
  );

  it(
    'a session that sets resource requests only becomes Ready',
    async () => {
      const name = `requests-only-${suffix}`;
      const spec = { image: AGENT_IMAGE, resources: { requests: { cpu: '50m', memory: '64Mi' } } };
      const res = await kubectlAs(tenant, ['apply', '-f', '-'], JSON.stringify(session(name, spec)));
      expect({ status: res.status, stderr: res.stderr }).toEqual({ status: 0, stderr: '' });
      created.push(name);
      const s = await waitFor(
        () => readSession(kube, NS, name),
        predicate(
          'requests-only session Ready=True',
          (x) => x?.status?.conditions?.find((c) => c.type === CONDITIONS.ready)?.status === 'True',
        ),
        { timeoutMs: READY_MS, intervalMs: 250 },
      );
      const pod = await kube.core.readNamespacedPod({ namespace: NS, name: s!.status!.podName! });
      const r = pod.spec!.containers[0]!.resources!;
      expect(r.requests).toMatchObject({ cpu: '50m', memory: '64Mi' });
      expect(r.limits?.cpu).toBeDefined();
      expect(r.limits?.memory).toBeDefined();
    },
    READY_MS + 30_000,
  );
});
