/**
 * Crash-only safety: the operator is SIGKILLed in the middle of 100 creates and started again;
 * every session ends with exactly one Pod and one Secret, owned by it.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { LABELS, MANAGER_NAME } from '@sandbox-platform/api';

import { predicate, waitFor } from '@sandbox-platform/test-support';
import { OperatorFixture } from './harness/fixture.js';

const COUNT = 100;
const LEASE = {
  LEASE_DURATION_SECONDS: '4',
  LEASE_RENEW_DEADLINE_SECONDS: '3',
  LEASE_RETRY_PERIOD_SECONDS: '1',
};

const fx = new OperatorFixture('op-crash');
const { kube, ns, sessions } = fx;

beforeAll(async () => {
  await fx.setup();
});

afterAll(async () => {
  await fx.teardown('SIGKILL');
});

async function children(): Promise<{
  pods: Map<string, string>;
  secrets: Map<string, string>;
  podCount: number;
  secretCount: number;
}> {
  const selector = `${LABELS.managedBy}=${MANAGER_NAME}`;
  const [pods, secrets] = await Promise.all([
    kube.core.listNamespacedPod({ namespace: ns.name, labelSelector: selector }),
    kube.core.listNamespacedSecret({ namespace: ns.name, labelSelector: selector }),
  ]);
  const owner = (o: { metadata?: { ownerReferences?: Array<{ uid: string }> } }): string =>
    o.metadata?.ownerReferences?.[0]?.uid ?? '';
  return {
    pods: new Map(pods.items.map((p) => [p.metadata?.name ?? '', owner(p)])),
    secrets: new Map(secrets.items.map((s) => [s.metadata?.name ?? '', owner(s)])),
    podCount: pods.items.length,
    secretCount: secrets.items.length,
  };
}

describe('killing the operator in the middle of 100 creates', () => {
  it('leaves exactly one Pod and one Secret per session after a restart', async () => {
    const first = await fx.startController({ env: LEASE });

    const names = Array.from({ length: COUNT }, (_, i) => `crash-${String(i).padStart(3, '0')}`);
    const creating = (async (): Promise<Map<string, string>> => {
      const uids = new Map<string, string>();
      for (let i = 0; i < names.length; i += 10) {
        const batch = await Promise.all(names.slice(i, i + 10).map((n) => sessions.create(n)));
        for (const s of batch) uids.set(s.metadata.name!, s.metadata.uid!);
      }
      return uids;
    })();

    // Kill it once a good part, but not all, of the Pods exist.
    const atKill = await waitFor(
      children,
      predicate('some pods created', (c) => c.podCount >= 20),
      { intervalMs: 20 },
    );
    await first.stop('SIGKILL');
    const uids = await creating;
    const afterKill = await children();
    console.log(
      `at kill: ${atKill.podCount} pods, ${atKill.secretCount} secrets; all ${COUNT} sessions created; before restart: ${afterKill.podCount} pods`,
    );
    expect(afterKill.podCount).toBeLessThan(COUNT);

    const second = await fx.startController({ env: LEASE }, 30_000);
    await waitFor(
      children,
      predicate(`${COUNT} pods and ${COUNT} secrets`, (c) => c.podCount >= COUNT && c.secretCount >= COUNT),
      {
        timeoutMs: 120_000,
      },
    );
    // Let any late duplicate surface before counting.
    await new Promise((r) => setTimeout(r, 3_000));
    const final = await children();
    expect(final.podCount).toBe(COUNT);
    expect(final.secretCount).toBe(COUNT);
    for (const name of names) {
      expect([name, final.pods.get(`sbs-${name}`)]).toEqual([name, uids.get(name)]);
      expect([name, final.secrets.get(`sbs-${name}-token`)]).toEqual([name, uids.get(name)]);
    }
    await second.stop('SIGTERM');
  });
});
