/**
 * Warm pools on a real API server (docs/adr/0016), with real agents standing in for the warm Pods
 * (harness/warm-agents.ts) and the operator as a child process:
 *
 * - a pool of 3: three sessions bound to its warm Pods (no Pod created for them), the fourth cold,
 *   the pool refilled to 3; the session token opens the bound agent, nothing else does;
 * - six sessions at once on three warm Pods: no Pod bound twice;
 * - warm Pods deleted: the pool refills;
 * - the session deleted while its bind is in flight: the claimed Pod goes with it, nothing leaks
 *   back into the pool;
 * - the operator SIGKILLed while a bind is in flight (delivered late, or never): after a restart
 *   the session converges on exactly that Pod, bound to it; nothing is bound twice, nothing orphaned;
 * - the captured bind replayed (to its Pod and to another warm Pod) is refused with 401;
 * - the CRD refuses Pod-shaping fields next to spec.poolRef, a pool name over 52 characters and
 *   minReady above replicas;
 * - the claim patch and the pool's exact deletes carry their preconditions to the API server.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import {
  deriveToken,
  GROUP,
  LABELS,
  MANAGER_NAME,
  POOL_PLURAL,
  readMasterKeyFile,
  VERSION,
  type SandboxPool,
  type SandboxPoolSpec,
  type SandboxSession,
} from '@sandbox-platform/api';

import { predicate, REPO_ROOT, waitFor } from '@sandbox-platform/test-support';
import { createKubeClients } from '../../src/kube/clients.js';
import { createPoolWriter, type PoolWriter } from '../../src/pool/pool-kube.js';
import { projectPoolPod, type PoolPodView } from '../../src/pool/pool-view.js';
import { OperatorFixture } from './harness/fixture.js';
import { masterKeyFile, type OperatorProcess } from './harness/operator-process.js';
import { readyIs } from './harness/sessions.js';
import { WarmAgents } from './harness/warm-agents.js';

const fx = new OperatorFixture('op-pool');
const { kube, ns, sessions } = fx;
const masterKey = (): Buffer => readMasterKeyFile(masterKeyFile());
let agents: WarmAgents;
let operator: OperatorProcess;

const LEASE = {
  LEASE_DURATION_SECONDS: '4',
  LEASE_RENEW_DEADLINE_SECONDS: '3',
  LEASE_RETRY_PERIOD_SECONDS: '1',
  BACKOFF_BASE_MS: '200',
  BACKOFF_MAX_SECONDS: '2',
};
const env = (): Record<string, string> => ({ ...LEASE, POOL_AGENT_PORT: String(agents.port) });

beforeAll(async () => {
  await fx.setup();
  agents = new WarmAgents(kube.core, ns.name, masterKey());
  operator = await fx.startController({ env: env() });
});

afterAll(async () => {
  await fx.teardown('SIGKILL');
  await agents.stopAll();
});

async function createPool(name: string, spec: SandboxPoolSpec): Promise<SandboxPool> {
  return (await kube.custom.createNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    plural: POOL_PLURAL,
    namespace: ns.name,
    body: { apiVersion: `${GROUP}/${VERSION}`, kind: 'SandboxPool', metadata: { name }, spec },
  })) as SandboxPool;
}

async function getPool(name: string): Promise<SandboxPool> {
  return (await kube.custom.getNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    plural: POOL_PLURAL,
    namespace: ns.name,
    name,
  })) as SandboxPool;
}

/** Waits for `n` warm Pods of the pool to exist, then starts their agents; returns their names. */
async function warmUp(pool: string, n: number): Promise<string[]> {
  await waitFor(
    () => agents.warmPods(pool),
    predicate(`${n} warm Pods of ${pool}`, (pods) => pods.length >= n),
    { timeoutMs: 30_000, intervalMs: 100 },
  );
  await agents.startWarm(pool);
  await waitFor(
    () => getPool(pool),
    predicate(`${pool} has ${n} available`, (p) => (p.status?.available ?? 0) >= n),
    { timeoutMs: 30_000, intervalMs: 100 },
  );
  return (await agents.warmPods(pool)).map((p) => p.metadata!.name!);
}

/** Every Pod of the namespace managed by the operator, by name, with its controller. */
async function pods(): Promise<Map<string, { kind?: string; uid?: string; name?: string }>> {
  const list = await kube.core.listNamespacedPod({
    namespace: ns.name,
    labelSelector: `${LABELS.managedBy}=${MANAGER_NAME}`,
  });
  return new Map(
    list.items
      .filter((p) => !p.metadata?.deletionTimestamp)
      .map((p) => {
        const owner = p.metadata?.ownerReferences?.find((o) => o.controller);
        return [p.metadata!.name!, { kind: owner?.kind, uid: owner?.uid, name: owner?.name }];
      }),
  );
}

/** The API server's refusal message (422 body), or '' when the call did not fail. */
const refusal = (err: unknown): string => (err instanceof k8s.ApiException ? String(err.body) : '');

const tokenOf = (s: SandboxSession): string =>
  deriveToken(masterKey(), { namespace: ns.name, name: s.metadata.name!, uid: s.metadata.uid! });

describe('a pool of 3', () => {
  it('binds three sessions to its warm Pods without creating a Pod, the fourth cold, and refills to 3', async () => {
    await createPool('trio', { replicas: 3 });
    const warm = await warmUp('trio', 3);
    const bound: SandboxSession[] = [];
    for (const name of ['trio-1', 'trio-2', 'trio-3']) {
      await sessions.create(name, { poolRef: { name: 'trio' } });
      bound.push((await sessions.waitFor(name, readyIs('True', 'SandboxReady')))!);
    }
    const podNames = bound.map((s) => s.status?.podName);
    expect([...podNames].sort()).toEqual([...warm].sort());
    const all = await pods();
    for (const s of bound) {
      expect(all.get(s.status!.podName!)).toMatchObject({ kind: 'SandboxSession', uid: s.metadata.uid });
      expect(all.has(`sbs-${s.metadata.name}`)).toBe(false);
      // The session token opens its bound agent; another session's does not.
      expect(await agents.execStatus(s.status!.podName!, tokenOf(s))).toBe(200);
    }
    expect(await agents.execStatus(bound[0]!.status!.podName!, tokenOf(bound[1]!))).toBe(401);

    await sessions.create('trio-4', { poolRef: { name: 'trio' } });
    const cold = await sessions.waitFor(
      'trio-4',
      predicate('a Pod named', (s) => Boolean(s?.status?.podName)),
    );
    expect(cold?.status?.podName).toBe('sbs-trio-4');

    // Refilled: three new warm Pods (owned by the pool), none of the bound ones among them.
    await waitFor(
      () => agents.warmPods('trio'),
      predicate('3 warm Pods again', (p) => p.length === 3),
      { timeoutMs: 30_000, intervalMs: 200 },
    );
    const refill = (await agents.warmPods('trio')).map((p) => p.metadata!.name!);
    expect(refill.filter((n) => warm.includes(n))).toEqual([]);
    const events = await operator.get('/metrics');
    expect(events.body).toMatch(
      /sandbox_operator_pool_claims_total\{namespace="[^"]+",pool="trio",result="hit"\} 3/,
    );
    expect(events.body).toMatch(/result="miss"\} 1/);
  });
});

describe('six sessions at once on three warm Pods', () => {
  it('never binds a Pod twice: three bound to distinct Pods, three cold', async () => {
    await createPool('race', { replicas: 3 });
    await warmUp('race', 3);
    const names = Array.from({ length: 6 }, (_, i) => `race-${i}`);
    const created = await Promise.all(names.map((n) => sessions.create(n, { poolRef: { name: 'race' } })));
    const settled = await Promise.all(
      names.map((n) =>
        sessions.waitFor(
          n,
          predicate('a Pod named', (s) => Boolean(s?.status?.podName)),
        ),
      ),
    );
    const warmBound = settled.filter((s) => !s!.status!.podName!.startsWith('sbs-'));
    expect(warmBound).toHaveLength(3);
    expect(new Set(warmBound.map((s) => s!.status!.podName)).size).toBe(3);
    const all = await pods();
    for (const s of warmBound) {
      const owner = all.get(s!.status!.podName!);
      expect(owner?.uid).toBe(created.find((c) => c.metadata.name === s!.metadata.name)!.metadata.uid);
      await sessions.waitFor(s!.metadata.name!, readyIs('True'));
      expect(await agents.execStatus(s!.status!.podName!, tokenOf(s!))).toBe(200);
    }
  });
});

describe('warm Pods deleted', () => {
  it('are replaced: the pool refills', async () => {
    await createPool('refill', { replicas: 2 });
    const warm = await warmUp('refill', 2);
    for (const name of warm) await kube.core.deleteNamespacedPod({ namespace: ns.name, name });
    await waitFor(
      () => agents.warmPods('refill'),
      predicate(
        '2 new warm Pods',
        (p) => p.length === 2 && p.every((x) => !warm.includes(x.metadata!.name!)),
      ),
      { timeoutMs: 30_000, intervalMs: 200 },
    );
  });
});

describe('a bound Pod deleted right after the bind', () => {
  // Regression: the pool informer and the child informers both see a bound Pod; a session woken
  // by the child informer's deletion could read the Pod from a pool index that had not seen it
  // yet, stay Ready naming it, and never be woken again (pool-controller.ts, poolPodChanged).
  it('gives the session another Pod', async () => {
    await createPool('lost', { replicas: 1 });
    await warmUp('lost', 1);
    await sessions.create('lost-1', { poolRef: { name: 'lost' } });
    const s = (await sessions.waitFor('lost-1', readyIs('True', 'SandboxReady')))!;
    const gone = s.status!.podName!;
    await kube.core.deleteNamespacedPod({ namespace: ns.name, name: gone, gracePeriodSeconds: 0 });
    await waitFor(
      () => pods(),
      predicate('another Pod controlled by the session', (all) =>
        [...all].some(([name, o]) => name !== gone && o.uid === s.metadata.uid),
      ),
      { timeoutMs: 30_000, intervalMs: 200 },
    );
  });
});

describe('the session deleted while its bind is in flight', () => {
  it('takes the claimed Pod with it: the Pod never returns to the pool, nothing is orphaned', async () => {
    await createPool('midbind', { replicas: 1 });
    await waitFor(
      () => agents.warmPods('midbind'),
      predicate('a warm Pod', (p) => p.length === 1),
      {
        timeoutMs: 30_000,
      },
    );
    const [pod] = await agents.warmPods('midbind');
    const relay = await agents.startHeld(pod!);
    await waitFor(
      () => getPool('midbind'),
      predicate('available', (p) => p.status?.available === 1),
      {
        timeoutMs: 30_000,
      },
    );
    const s = await sessions.create('midbind-1', { poolRef: { name: 'midbind' } });
    await relay.captured;
    await sessions.delete('midbind-1');
    relay.release();
    // The claimed Pod is the deleted session's: the garbage collector removes it.
    await waitFor(
      pods,
      predicate('the claimed Pod is gone', (all) => !all.has(pod!.metadata!.name!)),
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    const all = await pods();
    expect([...all.values()].some((o) => o.uid === s.metadata.uid)).toBe(false);
    // The pool made a new warm Pod; the claimed one never came back.
    await waitFor(
      () => agents.warmPods('midbind'),
      predicate('a new warm Pod', (p) => p.length === 1 && p[0]!.metadata!.name !== pod!.metadata!.name),
      { timeoutMs: 30_000 },
    );
  });
});

describe('the operator SIGKILLed while a bind is in flight', () => {
  for (const delivery of ['delivered after the kill', 'never delivered'] as const) {
    it(`converges after a restart (bind ${delivery}): that Pod, bound once, nothing orphaned`, async () => {
      const pool = delivery === 'never delivered' ? 'kill-lost' : 'kill-late';
      await createPool(pool, { replicas: 1 });
      await waitFor(
        () => agents.warmPods(pool),
        predicate('a warm Pod', (p) => p.length === 1),
        {
          timeoutMs: 30_000,
        },
      );
      const [pod] = await agents.warmPods(pool);
      const podName = pod!.metadata!.name!;
      const relay = await agents.startHeld(pod!);
      await waitFor(
        () => getPool(pool),
        predicate('available', (p) => p.status?.available === 1),
        {
          timeoutMs: 30_000,
        },
      );
      const s = await sessions.create(`${pool}-1`, { poolRef: { name: pool } });
      const request = await relay.captured;
      // The claim patch goes out beside the bind (claims.ts tryOne), so it may land just after the
      // agent saw the bind: wait for it before the kill (the case under test is a claimed Pod).
      await waitFor(
        pods,
        predicate('the Pod claimed by the session', (all) => {
          const owner = all.get(podName);
          return owner?.kind === 'SandboxSession' && owner.uid === s.metadata.uid;
        }),
        { timeoutMs: 10_000, intervalMs: 50 },
      );
      await operator.stop('SIGKILL');
      if (delivery === 'delivered after the kill') relay.release();
      else relay.drop();

      operator = await fx.startController({ env: env() }, 30_000);
      if (delivery === 'never delivered') relay.release();
      const done = await sessions.waitFor(`${pool}-1`, readyIs('True', 'SandboxReady'), 60_000);
      expect(done?.status?.podName).toBe(podName);
      expect(await agents.execStatus(podName, tokenOf(s))).toBe(200);
      const all = await pods();
      expect([...all.entries()].filter(([, o]) => o.uid === s.metadata.uid).map(([n]) => n)).toEqual([
        podName,
      ]);
      for (const [name, owner] of all) {
        if (owner.kind === 'SandboxSession')
          expect([name, await sessions.get(owner.name!)]).not.toEqual([name, undefined]);
      }
      // The captured bind, replayed to its Pod (bound) and to the pool's next warm Pod: 401 both.
      expect(await agents.replay(podName, request)).toBe(401);
      const [next] = await warmUp(pool, 1);
      expect(await agents.replay(next!, request)).toBe(401);
      expect(await agents.execStatus(next!, tokenOf(s))).toBe(401);
    });
  }
});

describe('validation by the API server', () => {
  it('refuses Pod-shaping fields next to spec.poolRef', async () => {
    const err = await sessions
      .create('shaped', { poolRef: { name: 'trio' }, image: 'mine:1' })
      .catch((e: unknown) => e);
    expect(refusal(err)).toMatch(/with spec.poolRef the pool's template shapes the Pod/);
  });

  it('refuses a pool name over 52 characters and minReady above replicas', async () => {
    const long = await createPool('p'.repeat(53), {}).catch((e: unknown) => e);
    expect(refusal(long)).toMatch(/at most 52 characters/);
    const min = await createPool('minready', { replicas: 1, minReady: 2 }).catch((e: unknown) => e);
    expect(refusal(min)).toMatch(/minReady must not exceed spec.replicas/);
  });

  it('accepts the example pool (crds/examples/pools/warm-pool.yaml)', async () => {
    const [doc] = k8s.loadAllYaml(
      readFileSync(join(REPO_ROOT, 'crds/examples/pools/warm-pool.yaml'), 'utf8'),
    ) as Array<{ spec: SandboxPoolSpec }>;
    const created = await createPool('example-warm', doc!.spec);
    expect(created.spec).toMatchObject({ replicas: 3, minReady: 1, namespaceDefault: true });
    await kube.custom.deleteNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      plural: POOL_PLURAL,
      namespace: ns.name,
      name: 'example-warm',
    });
  });

  it('keeps spec.poolRef immutable', async () => {
    await sessions.create('immutable', { poolRef: { name: 'trio' } });
    const err = await kube.custom
      .patchNamespacedCustomObject(
        {
          group: GROUP,
          version: VERSION,
          plural: 'sandboxsessions',
          namespace: ns.name,
          name: 'immutable',
          body: { spec: { poolRef: { name: 'other' } } },
        },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      )
      .catch((e: unknown) => e);
    expect(refusal(err)).toMatch(/spec.poolRef is immutable/);
  });
});

describe('the preconditions of the pool writes, on the API server', () => {
  const writer = (): PoolWriter => {
    const kc = new k8s.KubeConfig();
    kc.loadFromDefault();
    return createPoolWriter(createKubeClients(kc, { timeoutMs: 10_000 }));
  };
  const ref = { namespace: '', name: 'claimer', uid: '00000000-0000-0000-0000-000000000001' };

  async function target(name: string): Promise<PoolPodView> {
    const pod = await kube.core.createNamespacedPod({
      namespace: ns.name,
      body: {
        metadata: { name, labels: { purpose: 'precondition-test' } },
        spec: { containers: [{ name: 'c', image: 'x' }] },
      },
    });
    return projectPoolPod(pod)!;
  }

  async function touch(name: string): Promise<void> {
    await kube.core.patchNamespacedPod(
      { namespace: ns.name, name, body: { metadata: { labels: { touched: 'yes' } } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
  }

  it('a claim of a Pod that changed since it was seen is refused (409), of the current version applied', async () => {
    const seen = await target('claim-target');
    await touch('claim-target');
    expect(await writer().claimPod(seen, { ...ref, namespace: ns.name })).toBe('conflict');
    const fresh = projectPoolPod(
      await kube.core.readNamespacedPod({ namespace: ns.name, name: 'claim-target' }),
    )!;
    const claimed = await writer().claimPod(fresh, { ...ref, namespace: ns.name });
    expect(claimed).toMatchObject({ metadata: { controller: { kind: 'SandboxSession', uid: ref.uid } } });
  });

  it('an exact delete of a Pod that changed since it was seen deletes nothing', async () => {
    const seen = await target('delete-target');
    await touch('delete-target');
    expect(await writer().deletePod(seen, true)).toBe('gone');
    expect(
      (await kube.core.readNamespacedPod({ namespace: ns.name, name: 'delete-target' })).metadata?.name,
    ).toBe('delete-target');
  });
});
