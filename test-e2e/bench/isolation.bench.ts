/**
 * Benchmark of the isolation features on the local cluster, side by side in one run:
 *   1. gVisor vs runc: session create-to-Ready, and agent exec (`true`, host -> pod IP:8090 with
 *      the session token) p50/p99, in interleaved rounds;
 *   2. the NetworkPolicy enforcer: gateway -> agent exec p50 with the chart's policies in place
 *      and with them deleted (kube-router then drops the sandbox pods' firewall chains), in
 *      interleaved rounds, the policies restored at the end.
 * Goals (issue 11): gVisor exec p50 <= 3x runc; the enforcer adds <= 5% to gateway exec p50.
 *
 * Needs `make platform-up` (the chart and platform.env) and RuntimeClass gvisor.
 *   --rounds N    interleaved rounds (default 5)
 *   --calls N     exec calls per mode per round (default 100)
 *   --sessions N  sessions per runtime for create-to-Ready (default 3)
 */
import { parseArgs } from 'node:util';

import * as k8s from '@kubernetes/client-node';
import { AGENT_PORT, secretName, TOKEN_SECRET_KEY, type SandboxSession } from '@sandbox-platform/api';

import { kubeClients } from '../src/framework/index.js';
import {
  createSession,
  deleteSession,
  gatewayClient,
  GVISOR,
  hasRuntimeClass,
  namespaceOf,
  uniqueName,
} from '../specs/isolation/support.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    calls: { type: 'string', default: '100' },
    sessions: { type: 'string', default: '3' },
  },
});
const ROUNDS = Number(values.rounds);
const CALLS = Number(values.calls);
const SESSIONS = Number(values.sessions);

const kube = kubeClients();
const ns = namespaceOf('e2e');
const net = kube.kc.makeApiClient(k8s.NetworkingV1Api);

const quantile = (sorted: number[], q: number): number =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
const ms = (t0: bigint): number => Number(process.hrtime.bigint() - t0) / 1e6;

async function timed(call: () => Promise<unknown>, n: number, into: number[]): Promise<void> {
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    await call();
    into.push(ms(t0));
  }
}

function summary(label: string, samples: number[]): { p50: number; p99: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  const p50 = quantile(sorted, 0.5);
  const p99 = quantile(sorted, 0.99);
  console.log(
    `  ${label.padEnd(34)} n=${String(sorted.length).padEnd(5)} p50 ${p50.toFixed(2)} ms  p99 ${p99.toFixed(2)} ms`,
  );
  return { p50, p99 };
}

/** An exec of `true` straight to a session's agent (no gateway: the runtime's own cost). */
async function agentCaller(session: SandboxSession): Promise<() => Promise<void>> {
  const secret = await kube.core.readNamespacedSecret({
    name: secretName(session.metadata.name!),
    namespace: ns,
  });
  const token = Buffer.from(secret.data![TOKEN_SECRET_KEY]!, 'base64').toString('utf8');
  const url = `http://${session.status!.podIP}:${AGENT_PORT}/v1/exec`;
  return async () => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ command: 'true' }),
    });
    if (res.status !== 200) throw new Error(`agent exec: HTTP ${res.status}`);
    await res.arrayBuffer();
  };
}

async function runtimes(created: string[]): Promise<void> {
  console.log(
    `\n== gVisor vs runc (${ROUNDS} rounds x ${CALLS} agent execs, ${SESSIONS} sessions each for create-to-Ready)`,
  );
  const ready: Record<'runc' | 'gvisor', number[]> = { runc: [], gvisor: [] };
  const sessions: Partial<Record<'runc' | 'gvisor', SandboxSession>> = {};
  for (let i = 0; i < SESSIONS; i++) {
    for (const rt of ['runc', 'gvisor'] as const) {
      const name = uniqueName(`bench-${rt}`);
      created.push(name);
      const t0 = process.hrtime.bigint();
      const s = await createSession(kube, ns, name, rt === 'gvisor' ? { runtimeClassName: GVISOR } : {});
      ready[rt].push(ms(t0));
      sessions[rt] ??= s;
    }
  }
  const callers = { runc: await agentCaller(sessions.runc!), gvisor: await agentCaller(sessions.gvisor!) };
  const exec: Record<'runc' | 'gvisor', number[]> = { runc: [], gvisor: [] };
  for (const rt of ['runc', 'gvisor'] as const) await timed(callers[rt], 20, []); // warm-up
  for (let r = 0; r < ROUNDS; r++) {
    const order = r % 2 === 0 ? (['runc', 'gvisor'] as const) : (['gvisor', 'runc'] as const);
    for (const rt of order) await timed(callers[rt], CALLS, exec[rt]);
  }
  const runcExec = summary('agent exec, runc', exec.runc);
  const gvExec = summary('agent exec, gVisor', exec.gvisor);
  const runcReady = summary('create-to-Ready, runc', ready.runc);
  const gvReady = summary('create-to-Ready, gVisor', ready.gvisor);
  console.log(
    `  ratios gVisor/runc: exec p50 ${(gvExec.p50 / runcExec.p50).toFixed(2)}x (goal <= 3x), ` +
      `exec p99 ${(gvExec.p99 / runcExec.p99).toFixed(2)}x, create-to-Ready p50 ${(gvReady.p50 / runcReady.p50).toFixed(2)}x`,
  );
}

/** Deletes the chart's sandbox policies of the namespace; returns them for restoring. */
async function removePolicies(): Promise<k8s.V1NetworkPolicy[]> {
  const list = await net.listNamespacedNetworkPolicy({ namespace: ns });
  for (const np of list.items)
    await net.deleteNamespacedNetworkPolicy({ name: np.metadata!.name!, namespace: ns });
  return list.items;
}

async function restorePolicies(saved: k8s.V1NetworkPolicy[]): Promise<void> {
  for (const np of saved) {
    const { name, namespace, labels, annotations } = np.metadata!;
    await net.createNamespacedNetworkPolicy({
      namespace: namespace!,
      body: { metadata: { name, namespace, labels, annotations }, spec: np.spec },
    });
  }
}

/** kube-router reacts to policy events within its sync; give it time before measuring. */
const settle = (): Promise<void> => new Promise((r) => setTimeout(r, 3000));

async function enforcer(created: string[]): Promise<void> {
  console.log(
    `\n== NetworkPolicy enforcer: gateway -> agent exec (${ROUNDS} interleaved rounds x ${CALLS} calls)`,
  );
  const gw = gatewayClient('e2e');
  const name = uniqueName('bench-np');
  created.push(name);
  await createSession(kube, ns, name);
  const call = async (): Promise<void> => {
    const r = await gw.exec(name, { command: 'true' });
    if (r.exitCode !== 0) throw new Error(`gateway exec exited ${r.exitCode}`);
  };
  await timed(call, 20, []);
  const samples: Record<'with' | 'without', number[]> = { with: [], without: [] };
  // Alternate which mode goes first in each round, so a drift in machine load hits both alike.
  for (let r = 0; r < ROUNDS; r++) {
    if (r % 2 === 0) await timed(call, CALLS, samples.with);
    const saved = await removePolicies();
    try {
      await settle();
      await timed(call, CALLS, samples.without);
    } finally {
      await restorePolicies(saved);
      await settle();
    }
    if (r % 2 === 1) await timed(call, CALLS, samples.with);
  }
  const w = summary('gateway exec, policies enforced', samples.with);
  const wo = summary('gateway exec, policies removed', samples.without);
  console.log(
    `  enforcer overhead on gateway exec p50: ${((w.p50 / wo.p50 - 1) * 100).toFixed(1)}% (goal <= 5%)`,
  );
}

async function main(): Promise<void> {
  const created: string[] = [];
  try {
    if (await hasRuntimeClass(kube.kc, GVISOR)) await runtimes(created);
    else
      console.log(
        '\n== gVisor vs runc: skipped (no RuntimeClass gvisor: make cluster-up LOCALKUBE_GVISOR=true)',
      );
    await enforcer(created);
  } finally {
    for (const name of created) await deleteSession(kube, ns, name);
  }
}

await main();
