/**
 * SECURITY (issue 25, ADR 0027), on a real API server with the operator as a child process
 * watching two namespaces: the victim's and the attacker's. The attacker plants, in its own
 * namespace, a Pod labelled sandbox.dev/pool whose controller ownerReference names the victim
 * session, and serves a willing "agent" at its IP that records every request:
 *
 *   (a) under a made-up apiVersion (sandbox.dev/v0), naming the victim's UID;
 *   (b) under the right apiVersion (exact name and UID), in the other namespace;
 *   (c) a pooled victim, the planted Pod labelled with the victim's pool name;
 *   (d) a planted Pod that never becomes Ready (it must neither block nor delay the victim).
 *
 * In each, the victim keeps its own Pod (status.podName and podIP its own, Ready=True) after a
 * reconcile that ran once the operator had seen the planted Pod (harness/planted.ts `barrier`),
 * the planted server receives no request at all (no bind, no token), and the planted Pod is left
 * alone. Shown failing with the exact ownership test reverted (see the commit message).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { GROUP, POOL_PLURAL, readMasterKeyFile, VERSION, type SandboxSession } from '@sandbox-platform/api';

import { predicate, waitFor } from '@sandbox-platform/test-support';
import { OperatorFixture } from './harness/fixture.js';
import { masterKeyFile } from './harness/operator-process.js';
import { Attacker, PlantedServer } from './harness/planted.js';
import { ready, readyIs, runningReady, setPodStatus } from './harness/sessions.js';
import { WarmAgents } from './harness/warm-agents.js';

const fx = new OperatorFixture('op-victim');
const { kube, ns, sessions } = fx;
let attacker: Attacker;
let agents: WarmAgents;
const servers: PlantedServer[] = [];
let nextHost = 200;

beforeAll(async () => {
  await fx.setup();
  const att = await fx.namespace('op-attacker');
  attacker = new Attacker(kube.core, kube.custom, att.name);
  await attacker.setup();
  agents = new WarmAgents(kube.core, ns.name, readMasterKeyFile(masterKeyFile()));
  await fx.startController({
    env: {
      WATCH_NAMESPACE: '',
      WATCH_NAMESPACES: [ns.name, att.name].sort().join(','),
      POOL_AGENT_PORT: String(agents.port),
      BACKOFF_BASE_MS: '200',
      BACKOFF_MAX_SECONDS: '2',
    },
  });
});

afterAll(async () => {
  await fx.teardown('SIGTERM');
  await agents.stopAll();
  for (const s of servers) await s.stop();
});

/** A recording server at a loopback address of its own, on the operator's agent port. */
async function plantedServer(victim: SandboxSession): Promise<PlantedServer> {
  const server = new PlantedServer(`127.0.0.${nextHost++}`, agents.port, victim);
  await server.start();
  servers.push(server);
  return server;
}

/** A cold victim session, its Pod reported Ready at `ip`; resolves with the Ready session. */
async function readyVictim(name: string, ip: string): Promise<SandboxSession> {
  await sessions.create(name);
  await waitFor(
    () => kube.core.listNamespacedPod({ namespace: ns.name }),
    predicate(`Pod sbs-${name}`, (l) => l.items.some((p) => p.metadata?.name === `sbs-${name}`)),
  );
  await setPodStatus(kube.core, ns.name, `sbs-${name}`, runningReady(ip));
  return (await sessions.waitFor(name, readyIs('True', 'SandboxReady')))!;
}

/** Stamps activity and waits until a reconcile mirrored it: the operator looked at the session again. */
async function reconciledAgain(name: string): Promise<SandboxSession> {
  const at = new Date();
  await sessions.touch(name, at);
  const stamp = at.toISOString().replace(/\.\d{3}Z$/, 'Z');
  return (await sessions.waitFor(
    name,
    predicate(`lastActivityTime ${stamp}`, (s) => s?.status?.lastActivityTime === stamp),
  ))!;
}

/** The planted Pod is still there, untouched by the operator (same owner references). */
async function leftAlone(name: string, victim: SandboxSession): Promise<void> {
  const pod = await attacker.read(name);
  expect(pod?.metadata?.deletionTimestamp).toBeUndefined();
  expect(pod?.metadata?.ownerReferences?.[0]).toMatchObject({ uid: victim.metadata.uid, controller: true });
}

describe('a Pod planted in the attacker namespace naming a cold victim session', () => {
  it.each([
    ['(a) under a made-up apiVersion sandbox.dev/v0', 'a', 'sandbox.dev/v0'],
    ['(b) under the right apiVersion, exact name and UID', 'b', undefined],
  ])(
    '%s: the victim keeps its own Pod; the planted agent gets no request',
    async (_what, tag, apiVersion) => {
      const ip = `198.18.7.${tag === 'a' ? 1 : 2}`;
      const victim = await readyVictim(`victim-${tag}`, ip);
      const server = await plantedServer(victim);
      await attacker.plant(`planted-${tag}`, victim, { apiVersion, readyAt: server.host });
      await attacker.barrier();
      const after = await reconciledAgain(`victim-${tag}`);
      expect(after.status).toMatchObject({ podName: `sbs-victim-${tag}`, podIP: ip, phase: 'Ready' });
      expect(ready(after)).toMatchObject({ status: 'True', reason: 'SandboxReady' });
      expect(server.requests).toEqual([]);
      await leftAlone(`planted-${tag}`, victim);
    },
  );

  it('(d) that never becomes Ready: the victim becomes Ready on its own Pod all the same', async () => {
    await sessions.create('victim-d');
    const victim = (await sessions.waitFor(
      'victim-d',
      predicate('a Pod named', (s) => Boolean(s?.status?.podName)),
    ))!;
    const server = await plantedServer(victim);
    await attacker.plant('planted-d', victim);
    await attacker.barrier();
    await setPodStatus(kube.core, ns.name, 'sbs-victim-d', runningReady('198.18.7.4'));
    const s = (await sessions.waitFor('victim-d', readyIs('True', 'SandboxReady'), 20_000))!;
    expect(s.status).toMatchObject({ podName: 'sbs-victim-d', podIP: '198.18.7.4' });
    expect(server.requests).toEqual([]);
    await leftAlone('planted-d', victim);
  });
});

describe('a Pod planted in the attacker namespace with the pool label of a pooled victim', () => {
  it('(c) the victim keeps its warm Pod; the planted agent gets no request', async () => {
    await kube.custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      plural: POOL_PLURAL,
      namespace: ns.name,
      body: {
        apiVersion: `${GROUP}/${VERSION}`,
        kind: 'SandboxPool',
        metadata: { name: 'py' },
        spec: { replicas: 1 },
      },
    });
    await waitFor(
      () => agents.warmPods('py'),
      predicate('a warm Pod of py', (p) => p.length === 1),
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    const [warm] = await agents.startWarm('py');
    await waitFor(
      () =>
        kube.custom.getNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          plural: POOL_PLURAL,
          namespace: ns.name,
          name: 'py',
        }) as Promise<{ status?: { available?: number } }>,
      predicate('py has 1 available', (p) => (p.status?.available ?? 0) >= 1),
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    await sessions.create('victim-c', { poolRef: { name: 'py' } });
    const victim = (await sessions.waitFor('victim-c', readyIs('True', 'SandboxReady')))!;
    expect(victim.status?.podName).toBe(warm);
    const server = await plantedServer(victim);
    await attacker.plant('planted-c', victim, { poolLabel: 'py', readyAt: server.host });
    await attacker.barrier();
    const after = await reconciledAgain('victim-c');
    expect(after.status).toMatchObject({ podName: warm, podIP: agents.hostOf(warm!), phase: 'Ready' });
    expect(ready(after)).toMatchObject({ status: 'True', reason: 'SandboxReady' });
    expect(server.requests).toEqual([]);
    await leftAlone('planted-c', victim);
  });
});
