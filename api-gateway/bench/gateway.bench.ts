/**
 * Exec of `true`: p50/p99 latency (sequential) and requests/second (concurrent) through the
 * gateway, side by side with direct calls to the agent, with a trivial Node proxy in front of the
 * agent (one naive extra HTTP hop: bench/trivial-proxy.ts), with a TCP relay that parses nothing
 * (the floor of any process in the path: bench/tcp-pipe.ts), with the floors of a raw-socket HTTP
 * hop, a node:http hop and a fastify hop (bench/http-floor.ts) and with pods/exec (the
 * KubernetesExec transport) in the same run. The modes are measured interleaved (stats.ts) so
 * load drift on a shared machine hits all of them alike. Goals: gateway p50 <= 1.2x direct; Agent
 * >= 10x faster than KubernetesExec at p50. Not a test: it prints raw figures and ratios.
 *
 * Both modes measure what the Pod identity check costs (issue 25; goal: at most 3% on the exec
 * p50): the local mode runs a second gateway with GATEWAY_POD_IDENTITY_CHECK=false beside the
 * first, the cluster mode three one-replica copies of the deployed gateway Deployment (check on,
 * off, and off again: the A/A noise floor; pod-check-off-gateway.ts; --skip-pod-check leaves them
 * out), each dialled at its Pod IP, interleaved with the other modes.
 *
 * The local mode also measures (issue 12), with the gateway in its own process:
 * - the hardening's cost: the same gateway before the change (`--baseline <commit>`: that commit's
 *   own gateway, bench/baseline.ts) beside this tree's, in front of the same agent (goal: <= 5%);
 * - another tenant under attack: tenant B's exec while `--attack-workers` workers of tenant A keep
 *   its session, served by the hostile agent, busy with the attacks of bench/attack.ts, beside
 *   the same exec with tenant A quiet (goal: p50 <= 2x).
 *
 *   node bench/run.mjs [--local [--split]] [--iterations N] [--warmup N] [--concurrency N]
 *                      [--seconds N] [--rounds N] [--kexec-iterations N]
 *                      [--baseline <commit>] [--attack-workers N] [--gateway-rps N]
 *
 * Cluster mode (default) needs a deployed gateway and a node: BENCH_GATEWAY_URL (or
 * E2E_GATEWAY_URL), BENCH_GATEWAY_API_KEY (or E2E_GATEWAY_API_KEY), BENCH_NAMESPACE (or
 * E2E_NAMESPACE, default sandbox-e2e), KUBECONFIG (default .localkube/kubeconfig); the pod network
 * must be reachable from this process (direct mode). The calls through the deployed gateway go at
 * most --gateway-rps a second (default 90, under the default per-key limit of 100: bench/pacer.ts),
 * a 429 is waited out (its sample taken again, counted) and cleanup failures are reported after
 * the figures, never instead of them. --local runs gateway, trivial proxy and agent
 * in this process, --local --split each in its own process (local-setup.ts).
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';

import { execTrueCall, hostPort } from './agent-call.js';
import { serveAttacker, spawnAttacker, startHostileAgent, type Attacker } from './attack.js';
import { repoRoot, startBaselineGateway } from './baseline.js';
import { clusterSetup } from './cluster-setup.js';
import { EVIL, HOSTILE_IP, localAgentTarget, localSetup, serveRole, spawnRole } from './local-setup.js';
import { REFERENCES } from './references.js';
import { pacer } from './pacer.js';
import { podCheckCost } from './pod-check-cost.js';
import { podCheckGateways, type PodCheckGateways } from './pod-check-off-gateway.js';
import { cpuOf, gatewayPids } from './process-cpu.js';
import { measureInterleaved, report, type ModeSpec } from './stats.js';

const { values } = parseArgs({
  options: {
    local: { type: 'boolean', default: false },
    split: { type: 'boolean', default: false },
    serve: { type: 'string' },
    'agent-host': { type: 'string', default: '127.0.0.1' },
    'agent-port': { type: 'string', default: '0' },
    iterations: { type: 'string', default: '500' },
    warmup: { type: 'string', default: '50' },
    concurrency: { type: 'string', default: '8' },
    seconds: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '10' },
    'kexec-iterations': { type: 'string', default: '100' },
    baseline: { type: 'string' },
    'attack-workers': { type: 'string', default: '4' },
    'gateway-rps': { type: 'string', default: '90' },
    'gateway-url': { type: 'string' },
    'skip-pod-check': { type: 'boolean', default: false },
    session: { type: 'string' },
    workers: { type: 'string' },
  },
});
const opts = {
  iterations: Number(values.iterations),
  warmup: Number(values.warmup),
  concurrency: Number(values.concurrency),
  durationMs: Number(values.seconds) * 1000,
  rounds: Number(values.rounds),
};
// pods/exec costs tens of milliseconds per call: fewer samples keep the run short.
const kexecOpts = { iterations: Number(values['kexec-iterations']), warmup: 5 };

function spec(
  mode: string,
  call: () => Promise<void>,
  o: { iterations: number; warmup: number } = opts,
  pace?: () => Promise<void>,
  pids?: readonly number[],
): ModeSpec {
  return {
    mode,
    call,
    iterations: o.iterations,
    warmup: o.warmup,
    ...(pace ? { pace } : {}),
    ...(pids && pids.length > 0 ? { cpuMs: cpuOf(pids) } : {}),
  };
}

/** Runs every cleanup step; a failure is reported (exit code 1), never thrown over the figures. */
async function cleanup(steps: Array<[string, () => unknown]>): Promise<void> {
  for (const [what, step] of steps) {
    try {
      await step();
    } catch (err) {
      console.error(`cleanup: ${what} failed: ${err instanceof Error ? err.message : String(err)}`);
      process.exitCode = 1;
    }
  }
}

function env(...names: string[]): string | undefined {
  for (const n of names) if (process.env[n]) return process.env[n];
  return undefined;
}

function gatewayCall(
  url: string,
  apiKey: string,
  session: string,
  namespace?: string,
): ReturnType<typeof execTrueCall> {
  const query = namespace ? `?namespace=${encodeURIComponent(namespace)}` : '';
  return execTrueCall({ ...hostPort(url), path: `/v1/sessions/${session}/exec${query}`, token: apiKey });
}

/**
 * A client per reference, its mode name, and its ratio line against `direct`; `pids`: each
 * reference's process by role, when it has its own (its CPU per call is then measured).
 */
function referenceModes(
  urls: Record<string, string>,
  agentToken: string,
  to: string,
  direct: string,
  pids: Record<string, number> = {},
): Array<{ client: ReturnType<typeof execTrueCall>; spec: ModeSpec; ratio: [string, string, string] }> {
  return REFERENCES.map((r) => {
    const mode = `${r.label} -> ${to}`;
    const token = r.callerSendsToken ? agentToken : '';
    const client = execTrueCall({ ...hostPort(urls[r.role]!), path: '/v1/exec', token });
    const pid = pids[r.role];
    return {
      client,
      spec: spec(mode, client.call, opts, undefined, pid === undefined ? undefined : [pid]),
      ratio: [`${r.label} / direct (${r.means})`, mode, direct],
    };
  });
}

/**
 * Servers and clients of the issue-12 modes. Two separate measurements, so the attack cannot
 * spill into the before/after comparison: `cost` (this tree's gateway and the baseline's, each in
 * its own process, measured with the other modes) and `attack` (tenant B quiet and tenant B while
 * tenant A attacks, interleaved with each other only).
 */
interface HostileModes {
  cost: { specs: ModeSpec[]; ratios: Array<[string, string, string]> };
  attack: { specs: ModeSpec[]; ratios: Array<[string, string, string]> };
  attackCounts: Record<string, number>;
  close(): Promise<void>;
}

const OWN = 'gateway, own process';
const QUIET = 'gateway, own process, tenant A quiet';
/** Pause after each attacked slice (see its `after`). */
const ATTACK_SETTLE_MS = 1000;
const ATTACKED = 'gateway, own process, tenant A attacking';

/**
 * This tree's gateway in its own process (tenant B quiet), the same under attack by tenant A, and
 * the baseline commit's gateway in its own process; all in front of the same agent.
 */
async function hostileModes(
  agentPort: number,
  s: { apiKey: string; session: string },
): Promise<HostileModes> {
  const root = repoRoot();
  const target = localAgentTarget(agentPort);
  const hostile = await startHostileAgent(root, HOSTILE_IP, agentPort);
  const own = await spawnRole<{ url: string }>('gateway', target, { hostileIp: HOSTILE_IP });
  const baseline = values.baseline ? await startBaselineGateway(values.baseline, target) : undefined;
  const attacker: Attacker = await spawnAttacker({
    gatewayUrl: own.url,
    apiKey: EVIL.key,
    session: EVIL.session,
    workers: Number(values['attack-workers']),
  });
  const attackCounts: Record<string, number> = {};
  const after = gatewayCall(own.url, s.apiKey, s.session);
  const quiet = gatewayCall(own.url, s.apiKey, s.session);
  const attacked = gatewayCall(own.url, s.apiKey, s.session);
  const before = baseline ? gatewayCall(baseline.url, s.apiKey, s.session) : undefined;
  const BEFORE = `gateway before (${baseline?.commit ?? ''}), own process`;
  const cost = { specs: [spec(OWN, after.call)], ratios: [] as Array<[string, string, string]> };
  if (before) {
    cost.specs.push(spec(BEFORE, before.call));
    cost.ratios.push(['gateway after / before the hardening (goal <= 1.05)', OWN, BEFORE]);
  }
  const attackSpecs: ModeSpec[] = [
    spec(QUIET, quiet.call),
    {
      ...spec(ATTACKED, attacked.call),
      before: () => attacker.start(),
      after: async () => {
        for (const [k, v] of Object.entries(await attacker.stop()))
          attackCounts[k] = (attackCounts[k] ?? 0) + v;
        // The hostile agent may still be writing an answer the gateway already cut off: let it
        // notice, so the attack does not spill into the next mode's slice.
        await new Promise((r) => setTimeout(r, ATTACK_SETTLE_MS));
      },
    },
  ];
  return {
    cost,
    attack: { specs: attackSpecs, ratios: [['tenant B under attack / quiet (goal <= 2)', ATTACKED, QUIET]] },
    attackCounts,
    close: async () => {
      for (const c of [after, quiet, attacked, ...(before ? [before] : [])]) c.close();
      await attacker.close();
      await baseline?.close();
      await own.close();
      await hostile.close();
    },
  };
}

async function runLocal(split: boolean): Promise<void> {
  const s = await localSetup({ split });
  const DIRECT = 'direct agent (loopback)';
  const GATEWAY = 'gateway -> agent (loopback)';
  const NO_CHECK = 'gateway, Pod check off';
  const direct = execTrueCall({ ...s.agentUrl, path: '/v1/exec' });
  const refs = referenceModes(s.references, s.agentUrl.token, 'agent', DIRECT, s.pids);
  const gatewayPid = s.pids.gateway === undefined ? undefined : [s.pids.gateway];
  const noCheckPid =
    s.pids['gateway-no-pod-check'] === undefined ? undefined : [s.pids['gateway-no-pod-check']];
  const gateway = gatewayCall(s.gatewayUrl, s.apiKey, s.session);
  const noCheck = gatewayCall(s.gatewayNoCheckUrl, s.apiKey, s.session);
  const hostile = await hostileModes(s.agentUrl.port, s);
  try {
    const rows = await measureInterleaved(
      [
        spec(DIRECT, direct.call),
        ...refs.map((r) => r.spec),
        spec(GATEWAY, gateway.call, opts, undefined, gatewayPid),
        spec(NO_CHECK, noCheck.call, opts, undefined, noCheckPid),
        ...hostile.cost.specs,
      ],
      opts,
    );
    report(rows, [
      ['gateway / direct', GATEWAY, DIRECT],
      ...refs.map((r) => r.ratio),
      ['gateway / fastify floor', GATEWAY, 'fastify floor -> agent'],
      ['Pod identity check on / off (goal <= 1.03)', GATEWAY, NO_CHECK],
      ...hostile.cost.ratios,
    ]);
    const cost = podCheckCost();
    console.log(
      `Pod identity check alone (dialState, ${cost.onNs.toFixed(0)} ns on vs ${cost.offNs.toFixed(0)} ns off per call): ` +
        `+${(cost.onNs - cost.offNs).toFixed(0)} ns per dial (resolve + dial-time lookup: twice per exec)`,
    );
    console.log('\nanother tenant under attack (measured separately, the two modes interleaved):');
    report(await measureInterleaved(hostile.attack.specs, opts), hostile.attack.ratios);
    console.log(`tenant A's attack answers (status: count): ${JSON.stringify(hostile.attackCounts)}`);
  } finally {
    for (const c of [direct, gateway, noCheck, ...refs.map((r) => r.client)]) c.close();
    await cleanup([
      ['the hostile modes', () => hostile.close()],
      ['the local servers', () => s.close()],
    ]);
  }
}

async function runCluster(): Promise<void> {
  const gatewayUrl = env('BENCH_GATEWAY_URL', 'E2E_GATEWAY_URL');
  const apiKey = env('BENCH_GATEWAY_API_KEY', 'E2E_GATEWAY_API_KEY');
  if (!gatewayUrl || !apiKey)
    throw new Error('set BENCH_GATEWAY_URL and BENCH_GATEWAY_API_KEY (or run with --local)');
  const namespace = env('BENCH_NAMESPACE', 'E2E_NAMESPACE') ?? 'sandbox-e2e';
  const kubeconfig = env('KUBECONFIG') ?? '.localkube/kubeconfig';
  const s = await clusterSetup({ gatewayUrl, apiKey, namespace, kubeconfig });
  // Each reference in its own process on this host, as the gateway is in its own pod: an extra
  // process on the path, like any proxy.
  const servers = await Promise.all(REFERENCES.map((r) => spawnRole<{ url: string }>(r.role, s.direct)));
  const urls = Object.fromEntries(REFERENCES.map((r, i) => [r.role, servers[i]!.url]));
  const pids = Object.fromEntries(REFERENCES.map((r, i) => [r.role, servers[i]!.pid]));
  // The deployed gateway's processes (both replicas), for its CPU per exec beside the floors'.
  const platformNs = env('E2E_PLATFORM_NAMESPACE') ?? 'sandbox-system';
  const release = env('E2E_PLATFORM_RELEASE') ?? 'sandbox';
  const gwPids = await gatewayPids(kubeconfig, platformNs, release);
  const DIRECT = 'direct agent (podIP:8090)';
  const AGENT = 'gateway, Agent';
  const KEXEC = 'gateway, KubernetesExec';
  const POD_EXEC = 'pods/exec, same pod';
  const direct = execTrueCall({ ...s.direct, path: '/v1/exec' });
  const refs = referenceModes(urls, s.direct.token, 'podIP', DIRECT, pids);
  const viaAgent = gatewayCall(gatewayUrl, apiKey, s.agentSession, namespace);
  const viaKexec = gatewayCall(gatewayUrl, apiKey, s.kexecSession, namespace);
  // One pace for every call of the bench's API key through the deployed gateway (and its check-off copy).
  const pace = pacer(Number(values['gateway-rps']));
  let checkPods: PodCheckGateways | undefined;
  const CHECK_ON = 'gateway copy, identity check on';
  const CHECK_OFF = 'gateway copy, identity check off';
  const CHECK_OFF_B = 'gateway copy, check off again';
  const checkSpecs: ModeSpec[] = [];
  const checkClients: Array<ReturnType<typeof execTrueCall>> = [];
  if (!values['skip-pod-check']) {
    checkPods = await podCheckGateways(kubeconfig, platformNs, release);
    const on = gatewayCall(checkPods.on.url, apiKey, s.agentSession, namespace);
    const off = gatewayCall(checkPods.off.url, apiKey, s.agentSession, namespace);
    const offB = gatewayCall(checkPods.offB.url, apiKey, s.agentSession, namespace);
    checkClients.push(on, off, offB);
    const pidsOf = (pid: number | undefined): number[] | undefined => (pid === undefined ? undefined : [pid]);
    checkSpecs.push(
      spec(CHECK_ON, on.call, opts, pace, pidsOf(checkPods.on.pid)),
      spec(CHECK_OFF, off.call, opts, pace, pidsOf(checkPods.off.pid)),
      spec(CHECK_OFF_B, offB.call, opts, pace, pidsOf(checkPods.offB.pid)),
    );
  }
  console.log(`calls through the gateway paced at ${values['gateway-rps']}/s (its per-key limit)`);
  try {
    const rows = await measureInterleaved(
      [
        spec(DIRECT, direct.call),
        ...refs.map((r) => r.spec),
        spec(AGENT, viaAgent.call, opts, pace, gwPids),
        spec(POD_EXEC, s.podExec, kexecOpts),
        spec(KEXEC, viaKexec.call, kexecOpts, pace),
        ...checkSpecs,
      ],
      opts,
    );
    report(rows, [
      ['gateway Agent / direct agent', AGENT, DIRECT],
      ...refs.map((r) => r.ratio),
      ['gateway Agent / fastify floor', AGENT, 'fastify floor -> podIP'],
      ['pods/exec / direct agent (same pod)', POD_EXEC, DIRECT],
      ['gateway KubernetesExec / gateway Agent', KEXEC, AGENT],
      ...(checkPods
        ? ([
            ['Pod identity check on / off (goal <= 1.03)', CHECK_ON, CHECK_OFF],
            ['two identical copies, off / off again (the noise floor)', CHECK_OFF, CHECK_OFF_B],
          ] as Array<[string, string, string]>)
        : []),
    ]);
  } finally {
    for (const c of [direct, viaAgent, viaKexec, ...checkClients, ...refs.map((r) => r.client)]) c.close();
    await cleanup([
      ...(checkPods
        ? [['the check-off gateway copy', () => checkPods.close()] as [string, () => unknown]]
        : []),
      ...servers.map((r): [string, () => unknown] => ['a reference server', () => r.close()]),
      ['the bench sessions', () => s.close()],
    ]);
  }
}

if (values.serve === 'attacker') {
  await serveAttacker({
    gatewayUrl: values['gateway-url']!,
    apiKey: process.env.BENCH_ATTACK_KEY!,
    session: values.session!,
    workers: Number(values.workers),
  });
} else if (values.serve !== undefined) {
  // A child process of the split local mode.
  await serveRole(values.serve, { host: values['agent-host'], port: Number(values['agent-port']) });
} else {
  const mode = values.local
    ? values.split
      ? 'local split (one process each)'
      : 'local (one process)'
    : 'cluster';
  const load = loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
  console.log(`gateway bench: ${mode} mode, ${JSON.stringify(opts)}, load average ${load}`);
  await (values.local ? runLocal(values.split) : runCluster());
}
