/**
 * Benchmark of the isolation features on the local cluster, side by side in one run:
 *   1. gVisor vs runc, in interleaved rounds: agent exec (`true`, host -> pod IP:8090 with the
 *      session token) p50/p99, and the floors under it: the agent's GET /healthz (host TCP into
 *      the pod and node's HTTP, no shell), a syscall inside the pod (dd with 1-byte blocks: one
 *      read and one write per byte) and a process spawn inside the pod (/bin/true), both timed
 *      inside the pod; session create-to-Ready;
 *   2. the NetworkPolicy enforcer: gateway -> agent exec p50 with the chart's policies in place
 *      and with every policy of the sandbox and the release namespaces deleted, in interleaved
 *      rounds; "without" is measured only once kube-router has dropped the policies' rules from
 *      the pods' firewall chains (no "run through nw policy" jump names the sandbox's or the
 *      gateways' pod IPs in iptables-save; kube-router keeps a chain with its node-allow and
 *      default rules for every pod, policies or not), "with" only once they are back; the
 *      policies are restored at the end.
 *   Beside the agent, two floors per runtime, as Pods with the agent image (its node, a copy of
 *   the session Pod's security context and resources, no agent): a minimal HTTP server answering
 *   a POST without doing any work ("http floor"), and the same server doing one round trip per
 *   request through a socketpair to a long-lived `cat` ("pipe floor": the least a request can do
 *   to run something in another process, the way the agent talks to its bash). The ratio
 *   gVisor/runc of each floor is what gVisor allows on this machine for that much work.
 * Goals (issue 11): gVisor exec p50 <= 3x runc; the enforcer adds <= 5% to gateway exec p50.
 * The load average is printed at the start and the end: figures from a loaded machine say little.
 *
 * Needs `make platform-up` (the chart and platform.env) and RuntimeClass gvisor.
 *   --rounds N    interleaved rounds (default 5)
 *   --calls N     exec calls per mode per round (default 100)
 *   --sessions N  sessions per runtime for create-to-Ready (default 3)
 *   --only PART   runtimes or enforcer: run that part alone
 */
import { execFile } from 'node:child_process';
import { loadavg } from 'node:os';
import { parseArgs, promisify } from 'node:util';

import * as k8s from '@kubernetes/client-node';
import { AGENT_PORT, secretName, TOKEN_SECRET_KEY, type SandboxSession } from '@sandbox-platform/api';

import { isNotFound, kubeClients } from '../src/framework/index.js';
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
    only: { type: 'string' },
  },
});
const ROUNDS = Number(values.rounds);
const CALLS = Number(values.calls);
const SESSIONS = Number(values.sessions);
if (values.only !== undefined && !['runtimes', 'enforcer'].includes(values.only))
  throw new Error(`--only: ${values.only} is neither runtimes nor enforcer`);

const kube = kubeClients();
const ns = namespaceOf('e2e');
const net = kube.kc.makeApiClient(k8s.NetworkingV1Api);

const quantile = (sorted: number[], q: number): number =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
const ms = (t0: bigint): number => Number(process.hrtime.bigint() - t0) / 1e6;

/** Times `n` calls one after the other; `minIntervalMs` spaces their starts (not timed). */
async function timed(
  call: () => Promise<unknown>,
  n: number,
  into: number[],
  minIntervalMs = 0,
): Promise<void> {
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    await call();
    const took = ms(t0);
    into.push(took);
    if (took < minIntervalMs) await new Promise((r) => setTimeout(r, minIntervalMs - took));
  }
}

function summary(label: string, samples: number[]): { p50: number; p99: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  const p50 = quantile(sorted, 0.5);
  const p99 = quantile(sorted, 0.99);
  console.log(
    `  ${label.padEnd(44)} n=${String(sorted.length).padEnd(5)} p50 ${p50.toFixed(2)} ms  p99 ${p99.toFixed(2)} ms`,
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

/** GET /healthz of a session's agent: the network path into the pod and node's HTTP, no shell. */
function healthCaller(session: SandboxSession): () => Promise<void> {
  const url = `http://${session.status!.podIP}:${AGENT_PORT}/healthz`;
  return async () => {
    const res = await fetch(url);
    if (res.status !== 200) throw new Error(`agent healthz: HTTP ${res.status}`);
    await res.arrayBuffer();
  };
}

/** 1-byte dd blocks: one read and one write per byte, timed by dd inside the pod. */
const SYSCALL_BYTES = 20_000;
/** Spawns of /bin/true timed inside the pod by bash (ns clock). */
const SPAWNS = 100;
const FLOOR_COMMAND =
  `dd if=/dev/zero of=/dev/null bs=1 count=${SYSCALL_BYTES} 2>&1 | tail -n 1; ` +
  `s=$(date +%s%N); for i in $(seq ${SPAWNS}); do /bin/true; done; e=$(date +%s%N); echo "spawn-ns $(( (e - s) / ${SPAWNS} ))"`;

/** One measurement of the in-pod floors: microseconds per syscall and per spawn. */
async function floors(name: string): Promise<{ syscallUs: number; spawnUs: number }> {
  const r = await gatewayClient('e2e').exec(name, { command: FLOOR_COMMAND });
  const dd = /copied, ([0-9.]+) s/.exec(r.stdout);
  const spawn = /spawn-ns (\d+)/.exec(r.stdout);
  if (r.exitCode !== 0 || !dd || !spawn)
    throw new Error(`floor command failed (${r.exitCode}): ${r.stdout.slice(0, 300)}`);
  return { syscallUs: (Number(dd[1]) * 1e6) / (2 * SYSCALL_BYTES), spawnUs: Number(spawn[1]) / 1000 };
}

/**
 * The floor server (node -e): answers every POST with "ok" once the body is read; with
 * FLOOR_MODE=pipe, only after one byte went to a long-lived `cat` and came back (node's stdio
 * pipes are socketpairs, as between the agent and its bash); with FLOOR_MODE=bash, only after a
 * long-lived bash read a 5-byte frame (`true` and a newline) with `read -N`, ran it with `eval`
 * and printed one byte back: the least a request can do to run a command in a persistent shell
 * (one wake-up each way and about ten syscalls in bash, where the agent's framing makes four
 * wake-ups and about 140 syscalls, see docs/benchmarks.md).
 */
const FLOOR_SERVER = `
const http = require('node:http');
const { spawn } = require('node:child_process');
const waiting = [];
const CHILDREN = {
  pipe: { argv: ['cat'], frame: 'x' },
  bash: { argv: ['bash', '--noprofile', '--norc', '-c', 'while IFS= read -r -N 5 f; do eval "$f"; printf x; done'], frame: 'true\\n' },
};
const mode = CHILDREN[process.env.FLOOR_MODE];
let child;
if (mode) {
  child = spawn(mode.argv[0], mode.argv.slice(1), { stdio: ['pipe', 'pipe', 'inherit'] });
  child.on('exit', (code) => { console.error(mode.argv[0], 'exited', code); process.exit(1); });
  child.stdout.on('data', (d) => { for (let i = 0; i < d.length; i++) waiting.shift()?.(); });
}
http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    if (!child) return res.end('ok');
    waiting.push(() => res.end('ok'));
    child.stdin.write(mode.frame);
  });
}).listen(${AGENT_PORT});
`;

type FloorMode = 'http' | 'pipe' | 'bash';
const FLOOR_MODES: readonly FloorMode[] = ['http', 'pipe', 'bash'];

/**
 * Starts a floor Pod next to a session's Pod: the same image, runtime class, security contexts
 * and resources (so it passes the namespace's admission and quota and runs under the same
 * limits), none of its volumes, probes or env. Resolves with its caller once it answers.
 */
async function floorPod(session: SandboxSession, mode: FloorMode): Promise<() => Promise<void>> {
  const pod = await kube.core.readNamespacedPod({ name: `sbs-${session.metadata.name!}`, namespace: ns });
  const src = pod.spec!;
  const c = src.containers[0]!;
  const name = uniqueName(`floor-${mode}-${src.runtimeClassName ?? 'runc'}`);
  await kube.core.createNamespacedPod({
    namespace: ns,
    body: {
      metadata: { name, namespace: ns, labels: { 'app.kubernetes.io/name': 'isolation-bench-floor' } },
      spec: {
        runtimeClassName: src.runtimeClassName,
        nodeName: src.nodeName,
        securityContext: src.securityContext,
        automountServiceAccountToken: false,
        enableServiceLinks: false,
        restartPolicy: 'Never',
        terminationGracePeriodSeconds: 0,
        containers: [
          {
            name: 'floor',
            image: c.image,
            imagePullPolicy: c.imagePullPolicy,
            command: ['node', '-e', FLOOR_SERVER],
            env: [{ name: 'FLOOR_MODE', value: mode }],
            securityContext: c.securityContext,
            resources: c.resources,
          },
        ],
      },
    },
  });
  const t0 = process.hrtime.bigint();
  for (;;) {
    const p = await kube.core.readNamespacedPod({ name, namespace: ns });
    const ip = p.status?.podIP;
    if (ip) {
      const url = `http://${ip}:${AGENT_PORT}/`;
      const call = async (): Promise<void> => {
        const res = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ command: 'true' }),
        });
        if (res.status !== 200) throw new Error(`floor ${name}: HTTP ${res.status}`);
        await res.arrayBuffer();
      };
      try {
        await call();
        return call;
      } catch {
        // not listening yet
      }
    }
    if (p.status?.phase === 'Failed' || p.status?.phase === 'Succeeded')
      throw new Error(`floor pod ${name} ended (${p.status.phase}): see kubectl logs -n ${ns} ${name}`);
    if (ms(t0) > 120_000) throw new Error(`floor pod ${name} did not answer within 120 s`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

async function deleteFloorPods(): Promise<void> {
  const pods = await kube.core.listNamespacedPod({
    namespace: ns,
    labelSelector: 'app.kubernetes.io/name=isolation-bench-floor',
  });
  for (const p of pods.items)
    await kube.core
      .deleteNamespacedPod({ name: p.metadata!.name!, namespace: ns, gracePeriodSeconds: 0 })
      .catch((err: unknown) => {
        if (!isNotFound(err)) throw err;
      });
}

const median = (xs: number[]): number =>
  quantile(
    [...xs].sort((a, b) => a - b),
    0.5,
  );
const load = (): string =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');

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
  const health = { runc: healthCaller(sessions.runc!), gvisor: healthCaller(sessions.gvisor!) };
  const floorCalls: Record<'runc' | 'gvisor', Partial<Record<FloorMode, () => Promise<void>>>> = {
    runc: {},
    gvisor: {},
  };
  const floorMs: Record<'runc' | 'gvisor', Record<FloorMode, number[]>> = {
    runc: { http: [], pipe: [], bash: [] },
    gvisor: { http: [], pipe: [], bash: [] },
  };
  for (const rt of ['runc', 'gvisor'] as const)
    for (const mode of FLOOR_MODES) floorCalls[rt][mode] = await floorPod(sessions[rt]!, mode);
  const exec: Record<'runc' | 'gvisor', number[]> = { runc: [], gvisor: [] };
  const hz: Record<'runc' | 'gvisor', number[]> = { runc: [], gvisor: [] };
  const floor: Record<'runc' | 'gvisor', { syscallUs: number[]; spawnUs: number[] }> = {
    runc: { syscallUs: [], spawnUs: [] },
    gvisor: { syscallUs: [], spawnUs: [] },
  };
  for (const rt of ['runc', 'gvisor'] as const) {
    await timed(callers[rt], 20, []); // warm-up
    await timed(health[rt], 20, []);
    for (const mode of FLOOR_MODES) await timed(floorCalls[rt][mode]!, 20, []);
  }
  for (let r = 0; r < ROUNDS; r++) {
    const order = r % 2 === 0 ? (['runc', 'gvisor'] as const) : (['gvisor', 'runc'] as const);
    for (const rt of order) {
      await timed(health[rt], CALLS, hz[rt]);
      await timed(callers[rt], CALLS, exec[rt]);
      for (const mode of FLOOR_MODES) await timed(floorCalls[rt][mode]!, CALLS, floorMs[rt][mode]);
      const f = await floors(sessions[rt]!.metadata.name!);
      floor[rt].syscallUs.push(f.syscallUs);
      floor[rt].spawnUs.push(f.spawnUs);
    }
    console.log(`  round ${r + 1}/${ROUNDS} done (load ${load()})`);
  }
  const runcHz = summary('agent GET /healthz, runc', hz.runc);
  const gvHz = summary('agent GET /healthz, gVisor', hz.gvisor);
  const runcExec = summary('agent exec `true`, runc', exec.runc);
  const gvExec = summary('agent exec `true`, gVisor', exec.gvisor);
  const runcHttp = summary('http floor (POST, no work), runc', floorMs.runc.http);
  const gvHttp = summary('http floor (POST, no work), gVisor', floorMs.gvisor.http);
  const runcPipe = summary('pipe floor (+1 round trip to cat), runc', floorMs.runc.pipe);
  const gvPipe = summary('pipe floor (+1 round trip to cat), gVisor', floorMs.gvisor.pipe);
  const runcBash = summary('bash floor (+1 frame through bash), runc', floorMs.runc.bash);
  const gvBash = summary('bash floor (+1 frame through bash), gVisor', floorMs.gvisor.bash);
  const runcReady = summary('create-to-Ready, runc', ready.runc);
  const gvReady = summary('create-to-Ready, gVisor', ready.gvisor);
  const sys = { runc: median(floor.runc.syscallUs), gvisor: median(floor.gvisor.syscallUs) };
  const spawn = { runc: median(floor.runc.spawnUs), gvisor: median(floor.gvisor.spawnUs) };
  console.log(
    `  in-pod syscall (dd, 1-byte read+write; median of ${ROUNDS}): runc ${sys.runc.toFixed(2)} us, gVisor ${sys.gvisor.toFixed(2)} us`,
  );
  console.log(
    `  in-pod spawn of /bin/true (median of ${ROUNDS} x ${SPAWNS}): runc ${spawn.runc.toFixed(0)} us, gVisor ${spawn.gvisor.toFixed(0)} us`,
  );
  console.log(
    `  ratios gVisor/runc: exec p50 ${(gvExec.p50 / runcExec.p50).toFixed(2)}x (goal <= 3x), ` +
      `exec p99 ${(gvExec.p99 / runcExec.p99).toFixed(2)}x, healthz p50 ${(gvHz.p50 / runcHz.p50).toFixed(2)}x, ` +
      `syscall ${(sys.gvisor / sys.runc).toFixed(1)}x, spawn ${(spawn.gvisor / spawn.runc).toFixed(1)}x, ` +
      `create-to-Ready p50 ${(gvReady.p50 / runcReady.p50).toFixed(2)}x`,
  );
  console.log(
    `  p50 ratios gVisor/runc side by side: agent exec ${(gvExec.p50 / runcExec.p50).toFixed(2)}x, ` +
      `bash floor ${(gvBash.p50 / runcBash.p50).toFixed(2)}x, pipe floor ${(gvPipe.p50 / runcPipe.p50).toFixed(2)}x, ` +
      `http floor ${(gvHttp.p50 / runcHttp.p50).toFixed(2)}x; agent exec above the pipe floor: runc ` +
      `${(runcExec.p50 - runcPipe.p50).toFixed(2)} ms, gVisor ${(gvExec.p50 - gvPipe.p50).toFixed(2)} ms; above the bash floor: ` +
      `runc ${(runcExec.p50 - runcBash.p50).toFixed(2)} ms, gVisor ${(gvExec.p50 - gvBash.p50).toFixed(2)} ms`,
  );
  console.log(
    `  exec p50 above the healthz floor: runc ${(runcExec.p50 - runcHz.p50).toFixed(2)} ms, gVisor ${(gvExec.p50 - gvHz.p50).toFixed(2)} ms ` +
      `(= ${((gvExec.p50 - gvHz.p50) / (sys.gvisor / 1000)).toFixed(0)} gVisor syscalls at the in-pod rate)`,
  );
}

const PLATFORM_NS = process.env.E2E_PLATFORM_NAMESPACE ?? 'sandbox-system';

/** Deletes every NetworkPolicy of the sandbox and the release namespaces; returns them for restoring. */
async function removePolicies(): Promise<k8s.V1NetworkPolicy[]> {
  const saved: k8s.V1NetworkPolicy[] = [];
  for (const namespace of [ns, PLATFORM_NS]) {
    const list = await net.listNamespacedNetworkPolicy({ namespace });
    for (const np of list.items)
      await net.deleteNamespacedNetworkPolicy({ name: np.metadata!.name!, namespace });
    saved.push(...list.items);
  }
  return saved;
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

/** The pod IPs of the measured path: the session's and the gateways'. */
async function pathIPs(session: SandboxSession): Promise<string[]> {
  const gws = await kube.core.listNamespacedPod({
    namespace: PLATFORM_NS,
    labelSelector: 'app.kubernetes.io/component=gateway',
  });
  return [session.status!.podIP!, ...gws.items.map((p) => p.status!.podIP!)];
}

/** kube-router's pod firewall rules (KUBE-POD-FW jumps) naming one of the IPs; null without iptables-save. */
async function firewallRules(ips: string[]): Promise<number | null> {
  try {
    const { stdout } = await promisify(execFile)('iptables-save', ['-t', 'filter'], { maxBuffer: 64 << 20 });
    // kube-router keeps a firewall chain for every pod (with its node-allow and default rules);
    // a policy that selects a pod adds a "run through nw policy <name>" jump to it.
    return stdout
      .split('\n')
      .filter(
        (l) =>
          l.includes('KUBE-POD-FW') &&
          l.includes('run through nw policy') &&
          ips.some((ip) => l.includes(`${ip}/32`)),
      ).length;
  } catch {
    return null;
  }
}

/** Waits until kube-router has applied the change (the rule count satisfies `done`), up to 60 s. */
async function settle(ips: string[], what: string, done: (n: number) => boolean): Promise<void> {
  const t0 = process.hrtime.bigint();
  for (;;) {
    const n = await firewallRules(ips);
    if (n === null) {
      await new Promise((r) => setTimeout(r, 5000)); // cannot look: give kube-router its sync time
      return;
    }
    if (done(n)) {
      if (ms(t0) > 100)
        console.log(`  ${what}: ${n} policy rules on the path after ${(ms(t0) / 1000).toFixed(1)} s`);
      return;
    }
    if (ms(t0) > 60_000) throw new Error(`${what}: still ${n} policy rules on the path after 60 s`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Pace of the enforcer part's calls through the gateway (below the per-key rate limit). */
const GATEWAY_CALLS_PER_SECOND = 60;

async function enforcer(created: string[]): Promise<void> {
  console.log(
    `\n== NetworkPolicy enforcer: gateway -> agent exec (${ROUNDS} interleaved rounds x ${CALLS} calls)`,
  );
  const gw = gatewayClient('e2e');
  const name = uniqueName('bench-np');
  created.push(name);
  const session = await createSession(kube, ns, name);
  const ips = await pathIPs(session);
  const enforced = await firewallRules(ips);
  console.log(
    enforced === null
      ? '  iptables-save not available: "without" waits 5 s for kube-router instead of checking its rules'
      : `  with policies: ${enforced} policy rules in the path's pod firewall chains (${ips.join(', ')})`,
  );
  if (enforced === 0)
    throw new Error(
      'no firewall rule names the path: the enforcer does not run (LOCALKUBE_NETWORK_POLICY=false?)',
    );
  const call = async (): Promise<void> => {
    const r = await gw.exec(name, { command: 'true' });
    if (r.exitCode !== 0) throw new Error(`gateway exec exited ${r.exitCode}`);
  };
  // At most GATEWAY_CALLS_PER_SECOND: the gateway allows a key 100 requests per second (per
  // replica), and a quiet node runs these execs faster than that (429 rate-limited otherwise).
  const pace = 1000 / GATEWAY_CALLS_PER_SECOND;
  await timed(call, 20, [], pace);
  const samples: Record<'with' | 'without', number[]> = { with: [], without: [] };
  // Alternate which mode goes first in each round, so a drift in machine load hits both alike.
  for (let r = 0; r < ROUNDS; r++) {
    if (r % 2 === 0) await timed(call, CALLS, samples.with, pace);
    const saved = await removePolicies();
    try {
      await settle(ips, 'policies removed', (n) => n === 0);
      await timed(call, CALLS, samples.without, pace);
    } finally {
      await restorePolicies(saved);
      await settle(ips, 'policies restored', (n) => enforced === null || n >= enforced);
    }
    if (r % 2 === 1) await timed(call, CALLS, samples.with, pace);
    console.log(`  round ${r + 1}/${ROUNDS} done (load ${load()})`);
  }
  const w = summary('gateway exec, policies enforced', samples.with);
  const wo = summary('gateway exec, no policy, no rule', samples.without);
  console.log(
    `  enforcer overhead on gateway exec p50: ${((w.p50 / wo.p50 - 1) * 100).toFixed(1)}% (goal <= 5%), ` +
      `p99: ${((w.p99 / wo.p99 - 1) * 100).toFixed(1)}%`,
  );
}

async function main(): Promise<void> {
  const created: string[] = [];
  console.log(`load average at start: ${load()}`);
  try {
    if (values.only !== 'enforcer') {
      if (await hasRuntimeClass(kube.kc, GVISOR)) await runtimes(created);
      else
        console.log(
          '\n== gVisor vs runc: skipped (no RuntimeClass gvisor: the cluster runs with LOCALKUBE_GVISOR=false)',
        );
    }
    if (values.only !== 'runtimes') await enforcer(created);
  } finally {
    await deleteFloorPods();
    for (const name of created) await deleteSession(kube, ns, name);
    console.log(`\nload average at the end: ${load()}`);
  }
}

await main();
