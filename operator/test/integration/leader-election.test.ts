/**
 * Leader election with two operator processes on one Lease: only the leader reconciles; when it is
 * killed, the other takes over within the lease duration; SIGTERM releases the Lease and exits 0.
 * And a Lease that exists with an empty spec (the Helm chart creates it so that `helm uninstall`
 * removes it) is acquired at once, its labels and annotations kept.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';

import { predicate, waitFor } from '@sandbox-platform/test-support';
import { OperatorFixture } from './harness/fixture.js';
import type { OperatorProcess } from './harness/operator-process.js';
import { readPod } from './harness/sessions.js';

const LEASE_SECONDS = 6;
const RETRY_SECONDS = 1;
const LEASE = {
  LEASE_DURATION_SECONDS: String(LEASE_SECONDS),
  LEASE_RENEW_DEADLINE_SECONDS: '4',
  LEASE_RETRY_PERIOD_SECONDS: String(RETRY_SECONDS),
  LEASE_NAME: 'sandbox-operator-it',
};

const fx = new OperatorFixture('op-le');
const { kube, ns, sessions } = fx;
let a: OperatorProcess;
let b: OperatorProcess;

beforeAll(async () => {
  await fx.setup();
});

afterAll(async () => {
  await fx.teardown('SIGKILL');
});

async function readLease(): Promise<k8s.V1LeaseSpec> {
  const lease = await kube.kc.makeApiClient(k8s.CoordinationV1Api).readNamespacedLease({
    namespace: ns.name,
    name: LEASE.LEASE_NAME,
  });
  return lease.spec ?? {};
}

async function holder(): Promise<string | undefined> {
  return (await readLease()).holderIdentity;
}

describe('two operator replicas', () => {
  it("only the leader reconciles; the standby takes over once the dead leader's lease has expired", async () => {
    a = await fx.startController({ identity: 'replica-a', env: LEASE });
    b = fx.startOperator({ identity: 'replica-b', env: LEASE });
    await b.waitForLog((l) => l.message === 'waiting for leader lease');
    expect(await holder()).toBe('replica-a');

    await sessions.create('one');
    await waitFor(
      () => readPod(kube.core, ns.name, 'sbs-one'),
      predicate('pod sbs-one', (p) => p !== undefined),
    );
    await new Promise((r) => setTimeout(r, 2_000));
    expect(a.messages('created pod').map((l) => l.pod)).toEqual(['sbs-one']);
    expect(b.messages('created pod')).toEqual([]);
    expect(b.messages('acquired leader lease')).toEqual([]);
    expect((await a.get('/metrics')).body).toMatch(/^sandbox_operator_leader 1$/m);
    expect((await b.get('/metrics')).body).toMatch(/^sandbox_operator_leader 0$/m);
    expect((await b.get('/readyz')).status).toBe(200);

    await a.stop('SIGKILL');
    // Killed, not released: the Lease still names the dead leader, so the standby must wait it out.
    const dead = await readLease();
    expect(dead.holderIdentity).toBe('replica-a');
    // How fast is for benchmarks; this timeout is a safety net.
    const acquired = await b.waitForLog(
      (l) => l.message === 'acquired leader lease',
      (LEASE_SECONDS + 30) * 1000,
    );
    expect(Number(acquired.attempts)).toBeGreaterThan(1);
    const taken = await readLease();
    expect(taken).toMatchObject({
      holderIdentity: 'replica-b',
      leaseTransitions: (dead.leaseTransitions ?? 0) + 1,
    });
    // Taken after the expiry, not before: at least a lease duration after the last renewal.
    expect(new Date(taken.acquireTime!).getTime()).toBeGreaterThanOrEqual(
      new Date(dead.renewTime!).getTime() + LEASE_SECONDS * 1000,
    );

    await b.waitForLog((l) => l.message === 'controller started');
    await sessions.create('two');
    await waitFor(
      () => readPod(kube.core, ns.name, 'sbs-two'),
      predicate('pod sbs-two', (p) => p !== undefined),
    );
    // The log line follows the create call; wait for it rather than race the pipe.
    await b.waitForLog((l) => l.message === 'created pod' && l.pod === 'sbs-two');
    expect(b.messages('created pod').map((l) => l.pod)).toEqual(['sbs-two']);
  });

  it('SIGTERM drains, releases the Lease and exits 0; a new replica takes over at once', async () => {
    const code = await b.stop('SIGTERM');
    expect(code).toBe(0);
    expect(b.messages('released leader lease')).toHaveLength(1);
    expect(await holder()).toBe('');
    const c = fx.startOperator({ identity: 'replica-c', env: LEASE });
    try {
      // At once: on its first attempt, not after waiting out the Lease (no timing: a loaded
      // machine takes seconds just to start the process).
      const acquired = await c.waitForLog((l) => l.message === 'acquired leader lease');
      expect(acquired.attempts).toBe(1);
    } finally {
      expect(await c.stop('SIGTERM')).toBe(0);
    }
  });
});

describe('a Lease created empty by the chart', () => {
  it('is acquired at once, renewed and released, keeping its labels and annotations', async () => {
    const leases = kube.kc.makeApiClient(k8s.CoordinationV1Api);
    const name = 'sandbox-operator-chart';
    const helm = {
      labels: { 'app.kubernetes.io/managed-by': 'Helm', 'app.kubernetes.io/instance': 'sandbox' },
      annotations: { 'meta.helm.sh/release-name': 'sandbox', 'meta.helm.sh/release-namespace': ns.name },
    };
    await leases.createNamespacedLease({
      namespace: ns.name,
      body: { metadata: { name, ...helm }, spec: {} },
    });
    const env = { ...LEASE, LEASE_NAME: name };
    const d = fx.startOperator({ identity: 'replica-d', env });
    try {
      const acquired = await d.waitForLog((l) => l.message === 'acquired leader lease');
      expect(acquired.attempts).toBe(1);
      await d.waitForLog((l) => l.message === 'controller started');
      // Renewals (every RETRY_SECONDS) keep the object's metadata too.
      await new Promise((r) => setTimeout(r, (RETRY_SECONDS + 1) * 1000));
      const held = await leases.readNamespacedLease({ namespace: ns.name, name });
      expect(held.spec).toMatchObject({ holderIdentity: 'replica-d', leaseDurationSeconds: LEASE_SECONDS });
      expect(held.metadata).toMatchObject(helm);
    } finally {
      expect(await d.stop('SIGTERM')).toBe(0);
    }
    const released = await leases.readNamespacedLease({ namespace: ns.name, name });
    expect(released.spec?.holderIdentity).toBe('');
    expect(released.metadata).toMatchObject(helm);
  });
});
