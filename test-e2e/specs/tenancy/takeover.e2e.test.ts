/**
 * e2e (issue 25): a tenant that has only the built-in `edit` role in its own namespace cannot
 * capture another tenant's session. It plants Pods in ITS namespace that pose as the children of
 * the victim's session (our labels, a controller ownerReference naming the victim's UID) and run a
 * recorder on the agent port; the victim's Pod is then deleted (as an eviction would) so that the
 * operator looks for the session's Pod again. In all four variants the victim gets a Pod of its
 * own, stays Ready, serves execs through the gateway, and the planted Pod records no connection
 * at all (the operator's bind and the gateway's execs never reach it).
 *
 *   1. bogus apiVersion (sandbox.dev/v0), the original report;
 *   2. the right apiVersion;
 *   3. the pool label of a real pool of the victim's namespace (the victim is pooled);
 *   4. a planted Pod that never becomes Ready.
 *
 * Needs the platform (make platform-up: platform.env).
 */
import { randomBytes } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  API_VERSION,
  CONDITIONS,
  controlledBySession,
  POOL_LABELS,
  type SandboxSession,
} from '@sandbox-platform/api';

import { kubeClients } from '../../src/framework/index.js';
import { predicate, waitFor } from '@sandbox-platform/test-support';
import {
  AGENT_IMAGE,
  createSession,
  deleteSession,
  gatewayClient,
  namespaceOf,
} from '../isolation/support.js';
import { createPool, deletePool, readSession } from '../support/custom-objects.js';
import { grantEdit, kubectlAs, plantedPod, recorded, tenantUser, type PlantOptions } from './support.js';

const ATTACKER_NS = namespaceOf('e2e');
const VICTIM_NS = namespaceOf('other');
const READY_MS = 180_000;
const kube = kubeClients();
const suffix = randomBytes(3).toString('hex');

interface Variant {
  title: string;
  apiVersion: string;
  pooled?: boolean;
  neverReady?: boolean;
}

const VARIANTS: Variant[] = [
  { title: 'a bogus apiVersion (sandbox.dev/v0)', apiVersion: 'sandbox.dev/v0' },
  { title: 'the right apiVersion', apiVersion: API_VERSION },
  { title: 'the pool label of a pool in the victim namespace', apiVersion: API_VERSION, pooled: true },
  { title: 'a planted Pod that never becomes Ready', apiVersion: 'sandbox.dev/v0', neverReady: true },
];

/** The session's own Pod: in its namespace, controlled by it exactly, and the one its status names. */
async function ownPod(victim: SandboxSession): Promise<{ name: string; ip: string }> {
  const { namespace, name, uid } = victim.metadata as { namespace: string; name: string; uid: string };
  // Ready and the Pod it names, read together: a warm claim writes Ready beside its claim patch
  // (ADR 0016), and a claim that loses is corrected by the next reconcile, so a status may name a
  // Pod already gone for a moment (seen once on a fresh clone: 404 on the read right after).
  const found = await waitFor(
    async () => {
      const x = await readSession(kube, namespace, name);
      const ready = x?.status?.conditions?.find((c) => c.type === CONDITIONS.ready);
      if (ready?.status !== 'True' || !x?.status?.podName || !x.status.podIP) return undefined;
      const p = await kube.core
        .readNamespacedPod({ namespace, name: x.status.podName })
        .catch(() => undefined);
      return p ? { s: x, pod: p } : undefined;
    },
    predicate('victim Ready=True with a Pod that exists', (x) => x !== undefined),
    { timeoutMs: READY_MS, intervalMs: 500 },
  );
  const { s, pod } = found!;
  const ref = pod.metadata?.ownerReferences?.find((r) => r.controller);
  expect(controlledBySession(pod.metadata!.namespace!, ref, { namespace, name, uid })).toBe(true);
  expect(pod.status?.podIP).toBe(s.status!.podIP);
  return { name: pod.metadata!.name!, ip: pod.status!.podIP! };
}

describe('planted Pods cannot capture another tenant session (edit role only)', () => {
  const attacker = tenantUser('attacker');
  let revoke: (() => Promise<void>) | undefined;
  const pool = `victim-pool-${suffix}`;

  beforeAll(async () => {
    revoke = await grantEdit(kube, ATTACKER_NS, attacker);
    await createPool(kube, VICTIM_NS, pool, { replicas: 1, template: { image: AGENT_IMAGE } });
  }, READY_MS);

  afterAll(async () => {
    await deletePool(kube, VICTIM_NS, pool);
    await revoke?.();
  });

  it.each(VARIANTS)(
    'the victim keeps its own Pod and the planted Pod gets no connection: $title',
    async (v) => {
      const name = `victim-${VARIANTS.indexOf(v)}-${suffix}`;
      const victim = v.pooled
        ? await createPooledSession(name, pool)
        : await createSession(kube, VICTIM_NS, name);
      const uid = victim.metadata.uid!;
      const before = await ownPod(victim);
      const planted = `planted-${VARIANTS.indexOf(v)}-${suffix}`;
      const opts: PlantOptions = {
        namespace: ATTACKER_NS,
        name: planted,
        victim: { name, uid },
        apiVersion: v.apiVersion,
        labels: v.pooled ? { [POOL_LABELS.pool]: pool } : { [POOL_LABELS.pool]: 'any' },
        neverReady: v.neverReady,
      };
      try {
        // The attacker plants its Pod with its own rights: `edit` may create Pods.
        const created = await kubectlAs(
          attacker,
          ['create', '-f', '-', '-o', 'name'],
          JSON.stringify(plantedPod(opts)),
        );
        expect({ status: created.status, stderr: created.stderr }).toEqual({ status: 0, stderr: '' });
        await waitFor(
          () => kube.core.readNamespacedPod({ namespace: ATTACKER_NS, name: planted }),
          predicate('planted Pod running its recorder', (p) =>
            (p.status?.containerStatuses ?? []).some((c) => c.state?.running !== undefined),
          ),
          { timeoutMs: READY_MS, intervalMs: 500 },
        );
        // As an eviction would: the victim's Pod goes, the operator looks for the session's Pod.
        await kube.core.deleteNamespacedPod({
          namespace: VICTIM_NS,
          name: before.name,
          gracePeriodSeconds: 0,
        });
        await waitFor(
          () => readSession(kube, VICTIM_NS, name),
          predicate(
            'victim status no longer names its deleted Pod',
            (s) => s?.status?.podName !== before.name || !s?.status?.podIP,
          ),
          { timeoutMs: 60_000, intervalMs: 200 },
        ).catch(() => undefined); // a fast operator may already have replaced it under the same name
        const after = await ownPod((await readSession(kube, VICTIM_NS, name))!);
        expect(after.name).not.toBe(planted);

        // The victim's tenant still runs commands in its own session.
        const result = await gatewayClient('other').exec(name, { command: `echo ok-${suffix}` });
        expect(result.stdout).toBe(`ok-${suffix}\n`);
        expect(result.exitCode).toBe(0);

        // The status never named the planted Pod, and it never heard from us.
        const status = (await readSession(kube, VICTIM_NS, name))!.status!;
        expect(status.podName).not.toBe(planted);
        expect(await recorded(kube.core, ATTACKER_NS, planted)).toEqual([]);
      } finally {
        await kube.core
          .deleteNamespacedPod({ namespace: ATTACKER_NS, name: planted, gracePeriodSeconds: 0 })
          .catch(() => undefined);
        await deleteSession(kube, VICTIM_NS, name);
      }
    },
    READY_MS * 2,
  );
});

/** A session of the victim bound to a warm Pod of `pool`. */
async function createPooledSession(name: string, pool: string): Promise<SandboxSession> {
  const client = gatewayClient('other');
  await client.createSession({ name, pool });
  return waitFor(
    () => readSession(kube, VICTIM_NS, name),
    predicate(
      'pooled victim Ready',
      (s) => s?.status?.conditions?.find((c) => c.type === CONDITIONS.ready)?.status === 'True',
    ),
    { timeoutMs: READY_MS, intervalMs: 500 },
  ) as Promise<SandboxSession>;
}
