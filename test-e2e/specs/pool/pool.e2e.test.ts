/**
 * e2e (issue 14, docs/adr/0016): warm pools on a real node, through the in-cluster gateway.
 *
 * - A pool of 3: three sessions created through the gateway are bound to its warm Pods (Ready
 *   without a Pod created for them: each session's Pod existed before the session), the fourth is
 *   cold (`sbs-<name>`); the pool refills to 3 available.
 * - A pooled session passes the checks a cold one does: exec, files, the other tenant's key is
 *   refused, idle collection deletes it (and its Pod).
 * - A Pod's workspace never appears in a second session: a file written in one pooled session is
 *   absent from the next, which has another Pod.
 * - Warm Pods deleted, a session deleted right after its create (mid-claim): the pool converges,
 *   no Pod is bound twice, no pool Pod is owned by a session that does not exist.
 * - Binds from outside: forged (another key) 401; a genuine bind (signed by the test with the
 *   cluster's key: it plays a thief who has it) takes a warm Pod, and the operator then refuses to
 *   hand that Pod to a session (BindFailed, the Pod deleted, the session created cold); the same
 *   bind replayed to that Pod and to the pool's next warm Pod: 401; no credential but the session
 *   token opens a bound Pod.
 * - The chart's bind NetworkPolicy: pool Pods only, operator Pods only, the agent port only.
 *
 * Needs `make platform-up` (platform.env).
 */
import { randomBytes } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import {
  AGENT_PORT,
  bindSigner,
  CONDITIONS,
  LABELS,
  MANAGER_NAME,
  POOL_LABELS,
  type BindRequest,
  type SandboxPool,
  type SandboxPoolSpec,
  type SandboxSession,
} from '@sandbox-platform/api';

import { SandboxClient, UnavailableError } from '../../../sdk/typescript/src/index.js';
import { kubeClients } from '../../src/framework/index.js';
import { predicate, waitFor } from '@sandbox-platform/test-support';
import { namespaceOf } from '../isolation/support.js';
import {
  createPool as createPoolObject,
  deletePool,
  readPool,
  readSession,
} from '../support/custom-objects.js';

const NS = namespaceOf('e2e');
const OTHER_NS = namespaceOf('other');
const READY_MS = 180_000;
const kube = kubeClients();
const net = kube.kc.makeApiClient(k8s.NetworkingV1Api);

function client(tenant: 'e2e' | 'other' = 'e2e'): SandboxClient {
  const baseUrl = process.env.E2E_GATEWAY_URL;
  const apiKey = tenant === 'e2e' ? process.env.E2E_GATEWAY_API_KEY : process.env.E2E_OTHER_API_KEY;
  if (!baseUrl || !apiKey) throw new Error('needs E2E_GATEWAY_URL and the API keys (make platform-up)');
  return new SandboxClient({ baseUrl, apiKey, namespace: namespaceOf(tenant), timeoutMs: 240_000 });
}

const sbx = client();
const pools: string[] = [];
const sessions: string[] = [];
const suffix = randomBytes(2).toString('hex');

async function createPool(name: string, spec: SandboxPoolSpec): Promise<void> {
  await createPoolObject(kube, NS, name, spec);
  pools.push(name);
}

async function pool(name: string): Promise<SandboxPool> {
  const p = await readPool(kube, NS, name);
  if (!p) throw new Error(`pool ${name} does not exist`);
  return p;
}

async function available(name: string, n: number): Promise<void> {
  await waitFor(
    () => pool(name),
    predicate(`pool ${name}: ${n} available`, (p) => (p.status?.available ?? 0) >= n),
    { timeoutMs: READY_MS, intervalMs: 250 },
  );
}

const session = (name: string): Promise<SandboxSession | undefined> => readSession(kube, NS, name);

/** Pods of the namespace that belong to a pool (warm or bound since), not being deleted. */
async function poolPods(name?: string): Promise<k8s.V1Pod[]> {
  const list = await kube.core.listNamespacedPod({
    namespace: NS,
    labelSelector: name ? `${POOL_LABELS.pool}=${name}` : POOL_LABELS.pool,
  });
  return list.items.filter((p) => !p.metadata?.deletionTimestamp);
}

const warmOf = (pods: k8s.V1Pod[]): k8s.V1Pod[] =>
  pods.filter((p) => p.metadata?.ownerReferences?.find((o) => o.controller)?.kind === 'SandboxPool');

async function create(
  name: string,
  poolName?: string,
  extra: { idleTimeoutSeconds?: number } = {},
): Promise<void> {
  sessions.push(name);
  await sbx.createSession({
    name,
    ...(poolName ? { pool: poolName } : {}),
    idleTimeoutSeconds: 900,
    ...extra,
  });
}

async function readySession(name: string): Promise<SandboxSession> {
  return (await waitFor(
    () => session(name),
    predicate(
      `${name} Ready`,
      (s) => s?.status?.conditions?.find((c) => c.type === CONDITIONS.ready)?.status === 'True',
    ),
    { timeoutMs: READY_MS, intervalMs: 250 },
  ))!;
}

/**
 * A call to a session, repeated while the gateway answers 503 session-not-ready (up to 4 min):
 * on the shared 2-CPU node a sandbox's readiness probe (every 2 s per Pod, about ten Pods here)
 * can time out under load and a Ready Pod turns unready for a while; the gateway's own wait
 * is at most 120 s. Each retry is logged, so a Pod that never comes back still fails the test.
 */
async function whenReady<T>(what: string, call: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 240_000;
  for (;;) {
    try {
      return await call();
    } catch (err) {
      if (!(err instanceof UnavailableError) || err.slug !== 'session-not-ready' || Date.now() > deadline)
        throw err;
      console.log(`${what}: ${err.detail}; retrying`);
    }
  }
}

/** POST /v1/bind straight to a Pod's agent (the test process reaches pod IPs, as other specs do). */
async function postBind(podIP: string, body: BindRequest): Promise<number> {
  const res = await fetch(`http://${podIP}:${AGENT_PORT}/v1/bind`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  await res.arrayBuffer();
  return res.status;
}

async function execStatus(podIP: string, token: string): Promise<number> {
  const res = await fetch(`http://${podIP}:${AGENT_PORT}/v1/exec`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ command: 'true' }),
    signal: AbortSignal.timeout(30_000),
  });
  await res.arrayBuffer();
  return res.status;
}

async function masterKey(): Promise<Buffer> {
  const release = process.env.E2E_PLATFORM_RELEASE ?? 'sandbox';
  const secret = await kube.core.readNamespacedSecret({
    namespace: process.env.E2E_PLATFORM_NAMESPACE ?? 'sandbox-system',
    name: `${release}-sandbox-platform-master-key`,
  });
  return Buffer.from(secret.data?.['master-key'] ?? '', 'base64');
}

function bindFor(
  pod: k8s.V1Pod,
  signer: { sign: ReturnType<typeof bindSigner>['sign'] },
  token: string,
): BindRequest {
  const m = pod.metadata!;
  return signer.sign({
    version: 1,
    pod: { namespace: m.namespace!, name: m.name!, uid: m.uid! },
    session: { namespace: NS, name: 'thief', uid: '00000000-0000-0000-0000-00000000beef' },
    token,
  });
}

beforeAll(async () => {
  await createPool(`trio-${suffix}`, { replicas: 3 });
  await createPool(`solo-${suffix}`, { replicas: 1 });
});

afterAll(async () => {
  await Promise.all(sessions.map((n) => sbx.deleteSession(n).catch(() => undefined)));
  for (const name of pools) {
    await deletePool(kube, NS, name).catch(() => undefined);
  }
});

describe('a pool of 3', () => {
  const trio = `trio-${suffix}`;
  /** A session bound from the pool by the first test. */
  let pooledName = '';

  it(
    'binds three sessions to its warm Pods without creating a Pod, the fourth cold, and refills',
    async () => {
      await available(trio, 3);
      const warm = warmOf(await poolPods(trio)).map((p) => p.metadata!.name!);
      expect(warm).toHaveLength(3);
      // Four at once: three claims take the three warm Pods, the fourth finds none (the refill's Pods
      // cannot be Ready that soon) and is created cold.
      const names = [1, 2, 3, 4].map((i) => `pool-${suffix}-${i}`);
      await Promise.all(names.map((name) => create(name, trio)));
      const ready = await Promise.all(names.map(readySession));
      const pooled = ready.filter((s) => !s.status!.podName!.startsWith('sbs-'));
      const cold = ready.filter((s) => s.status!.podName!.startsWith('sbs-'));
      expect([pooled.length, cold.length]).toEqual([3, 1]);
      expect(cold[0]!.status?.podName).toBe(`sbs-${cold[0]!.metadata.name}`);
      expect(pooled.map((s) => s.status!.podName).sort()).toEqual([...warm].sort());
      for (const s of pooled) {
        const name = s.metadata.name!;
        const pod = await kube.core.readNamespacedPod({ namespace: NS, name: s.status!.podName! });
        // The Pod existed before the session: nothing was created for it.
        expect(new Date(pod.metadata!.creationTimestamp!).getTime()).toBeLessThanOrEqual(
          new Date(s.metadata.creationTimestamp!).getTime(),
        );
        expect(pod.metadata?.ownerReferences?.[0]).toMatchObject({
          kind: 'SandboxSession',
          uid: s.metadata.uid,
        });
        expect(pod.metadata?.labels?.[LABELS.session]).toBe(name);
        await expect(kube.core.readNamespacedPod({ namespace: NS, name: `sbs-${name}` })).rejects.toThrow();
      }
      await available(trio, 3);
      const refill = warmOf(await poolPods(trio)).map((p) => p.metadata!.name!);
      expect(refill.filter((n) => warm.includes(n))).toEqual([]);
      pooledName = pooled[0]!.metadata.name!;
      // The other three are not needed any more: fewer Pods probing on the node.
      await Promise.all(names.filter((n) => n !== pooledName).map((n) => sbx.deleteSession(n)));
      // Waits for the pool, four sessions and the refill in a row: their bounds add up.
    },
    3 * READY_MS,
  );

  it('gives a pooled session the behaviour of a cold one: exec, files, tenancy', async () => {
    const name = pooledName;
    const r = await whenReady(name, () =>
      sbx.exec(name, { command: 'echo hi; echo $HOME; id -u', waitSeconds: 120 }),
    );
    expect([r.exitCode, r.stdout]).toEqual([0, 'hi\n/workspace\n1000\n']);
    await whenReady(name, () => sbx.writeFile(name, 'notes/a.txt', new TextEncoder().encode('kept')));
    expect(new TextDecoder().decode(await whenReady(name, () => sbx.readFile(name, 'notes/a.txt')))).toBe(
      'kept',
    );
    expect((await whenReady(name, () => sbx.exec(name, { command: 'cat notes/a.txt' }))).stdout).toBe('kept');
    const other = client('other');
    const err = await other.exec(name, { command: 'true' }, NS).catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 403 });
    const err2 = await other.getSession(name, NS).catch((e: unknown) => e);
    expect(err2).toMatchObject({ status: 403 });
    expect(OTHER_NS).not.toBe(NS);
  });

  it('collects an idle pooled session like a cold one, and its Pod with it', async () => {
    const name = `pool-${suffix}-idle`;
    await available(trio, 1);
    // Short, the wait below is all idle time; long enough that the session is seen Ready first.
    await create(name, trio, { idleTimeoutSeconds: 8 });
    const s = await readySession(name);
    const podName = s.status!.podName!;
    expect(podName.startsWith('sbs-')).toBe(false);
    await waitFor(
      () => session(name),
      predicate('collected', (x) => x === undefined),
      {
        timeoutMs: 120_000,
        intervalMs: 250,
      },
    );
    await waitFor(
      async () => (await poolPods(trio)).some((p) => p.metadata?.name === podName),
      predicate('its Pod deleted', (present) => !present),
      { timeoutMs: 120_000, intervalMs: 250 },
    );
  });
});

describe('a Pod and its workspace', () => {
  it('never appear in a second session', async () => {
    const trio = `trio-${suffix}`;
    await available(trio, 1);
    const first = `pool-${suffix}-ws1`;
    await create(first, trio);
    const a = await readySession(first);
    await whenReady(first, () => sbx.exec(first, { command: 'echo secret > marker.txt; touch /tmp/marker' }));
    await sbx.deleteSession(first);
    await available(trio, 1);
    const second = `pool-${suffix}-ws2`;
    await create(second, trio);
    const b = await readySession(second);
    expect(b.status?.podName).not.toBe(a.status?.podName);
    const r = await whenReady(second, () =>
      sbx.exec(second, { command: 'ls -A /workspace /tmp; test ! -e marker.txt && test ! -e /tmp/marker' }),
    );
    expect(r.exitCode).toBe(0);
    expect(r.stdout).not.toContain('marker');
  });
});

describe('convergence', () => {
  // Three waits in a row for Pods to start (the refill of the deleted and claimed Pods): on a busy
  // 2-CPU node each can take a minute or more, so the test gets the sum of their bounds.
  it(
    'warm Pods deleted are replaced; a session deleted mid-claim leaves nothing bound twice nor orphaned',
    async () => {
      const trio = `trio-${suffix}`;
      const t0 = Date.now();
      const step = (what: string): void =>
        console.log(`convergence: ${what} at ${Math.round((Date.now() - t0) / 1000)} s`);
      await available(trio, 3);
      step('3 available');
      const warm = warmOf(await poolPods(trio)).map((p) => p.metadata!.name!);
      await Promise.all(
        warm.slice(0, 2).map((name) => kube.core.deleteNamespacedPod({ namespace: NS, name })),
      );
      const quick = [1, 2, 3, 4].map((i) => `pool-${suffix}-quick-${i}`);
      await Promise.all(quick.map((n) => create(n, trio)));
      await Promise.all(quick.map((n) => sbx.deleteSession(n)));
      step('2 warm Pods deleted, 4 sessions created and deleted');
      await available(trio, 3);
      step('refilled to 3');
      await waitFor(
        async () => {
          const owners = (await poolPods()).map((p) =>
            p.metadata?.ownerReferences?.find((o) => o.controller),
          );
          const orphans = [];
          for (const o of owners)
            if (o?.kind === 'SandboxSession' && !(await session(o.name))) orphans.push(o.name);
          return orphans;
        },
        predicate('no pool Pod owned by a deleted session', (orphans) => orphans.length === 0),
        { timeoutMs: 120_000, intervalMs: 250 },
      );
      const bound = (await poolPods()).map((p) => p.metadata?.ownerReferences?.find((o) => o.controller));
      const sessionUids = bound.filter((o) => o?.kind === 'SandboxSession').map((o) => o!.uid);
      expect(new Set(sessionUids).size).toBe(sessionUids.length);
      expect(
        warmOf(await poolPods(trio)).filter((p) => warm.slice(0, 2).includes(p.metadata!.name!)),
      ).toEqual([]);
    },
    3 * READY_MS,
  );
});

describe('binds from outside the operator', () => {
  const solo = `solo-${suffix}`;

  it('refuses a forged bind (signed with another key) with 401', async () => {
    await available(solo, 1);
    const [pod] = warmOf(await poolPods(solo));
    const forged = bindFor(pod!, bindSigner(randomBytes(32)), 'f'.repeat(64));
    expect(await postBind(pod!.status!.podIP!, forged)).toBe(401);
    expect(await execStatus(pod!.status!.podIP!, 'f'.repeat(64))).toBe(401);
  });

  it('never hands a Pod bound by someone else to a session; the bind replayed is 401 everywhere', async () => {
    await available(solo, 1);
    const [stolen] = warmOf(await poolPods(solo));
    const thief = bindFor(stolen!, bindSigner(await masterKey()), 'e'.repeat(64));
    expect(await postBind(stolen!.status!.podIP!, thief)).toBe(200);
    expect(await postBind(stolen!.status!.podIP!, thief)).toBe(401);

    const name = `pool-${suffix}-after-theft`;
    await create(name, solo);
    const s = await readySession(name);
    expect(s.status?.podName).toBe(`sbs-${name}`);
    const events = await kube.core.listNamespacedEvent({
      namespace: NS,
      fieldSelector: `involvedObject.name=${name}`,
    });
    expect(events.items.map((e) => e.reason)).toContain('BindFailed');
    await waitFor(
      async () => (await poolPods(solo)).some((p) => p.metadata?.uid === stolen!.metadata!.uid),
      predicate('the stolen Pod deleted', (present) => !present),
      { timeoutMs: 60_000, intervalMs: 500 },
    );

    await available(solo, 1);
    const [next] = warmOf(await poolPods(solo));
    expect(await postBind(next!.status!.podIP!, thief)).toBe(401);
  });

  it('opens a bound Pod to its session token only (not the bind key, not a bind, not another token)', async () => {
    await available(solo, 1);
    const name = `pool-${suffix}-locked`;
    await create(name, solo);
    const s = await readySession(name);
    const ip = s.status!.podIP!;
    expect(s.status?.podName?.startsWith(solo)).toBe(true);
    const signer = bindSigner(await masterKey());
    const pod = await kube.core.readNamespacedPod({ namespace: NS, name: s.status!.podName! });
    const again = bindFor(pod, signer, 'd'.repeat(64));
    expect(await postBind(ip, again)).toBe(401);
    for (const bearer of [signer.publicKeyHex, again.signature, 'd'.repeat(64)]) {
      expect(await execStatus(ip, bearer)).toBe(401);
    }
    expect((await whenReady(name, () => sbx.exec(name, { command: 'true' }))).exitCode).toBe(0);
  });
});

describe('the bind NetworkPolicy', () => {
  it('admits the operator to pool Pods only, on the agent port only', async () => {
    const np = await net.readNamespacedNetworkPolicy({
      name: 'sandbox-ingress-bind-from-operator',
      namespace: NS,
    });
    expect(np.spec?.podSelector).toEqual({
      matchLabels: { [LABELS.component]: 'sandbox', [LABELS.managedBy]: MANAGER_NAME },
      matchExpressions: [{ key: POOL_LABELS.pool, operator: 'Exists' }],
    });
    expect(np.spec?.ingress).toHaveLength(1);
    expect(np.spec?.ingress?.[0]?.ports).toEqual([{ protocol: 'TCP', port: AGENT_PORT }]);
    expect(np.spec?.ingress?.[0]?._from?.[0]?.podSelector?.matchLabels?.['app.kubernetes.io/component']).toBe(
      'operator',
    );
  });
});
