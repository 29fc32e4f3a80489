/**
 * Operator benchmark (not a test): on a control-plane-only localkube (or BENCH_KUBECONFIG),
 *
 * 1. provisioning latency, side by side: the same client creates N Secrets + N Pods directly
 *    (baseline), then N SandboxSessions are created at once and the operator creates their
 *    Secrets + Pods; time until all N of each exist; ratio operator / direct (goal <= 1.2);
 * 2. throughput: sessions provisioned per second and reconciles per second;
 * 3. operator RSS with 1,000 and 5,000 sessions (goal <= 200 MB at 5,000).
 *
 * Usage: node operator/bench/run.mjs [--sessions 200] [--rounds 3] [--rss 1000,5000]
 *        [--concurrency 16] [--operator-env K=V,...] (RSS phase) [--profile DIR] (V8 CPU profiles
 *        of the provisioning rounds' operators, written on exit; open in Chrome DevTools)
 * OPERATOR_MAIN=path/to/main.js benchmarks another build (e.g. an older commit's, side by side).
 * Figures taken on a loaded machine are noisy; the load average is printed with them.
 */
import { readFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';

import * as k8s from '@kubernetes/client-node';
import { readMasterKeyFile } from '@sandbox-platform/api';

import { applyCrds, createTestNamespace, startControlPlane } from '@sandbox-platform/test-support';
import { createKubeClients } from '../src/kube/clients.js';
import { Sessions } from '../test/integration/harness/sessions.js';
import {
  masterKeyFile,
  startOperator,
  type OperatorProcess,
} from '../test/integration/harness/operator-process.js';
import { countChildren } from './count-children.js';
import { createDirectly } from './direct-create.js';
import { requestCounts, requestDelta } from './apiserver-requests.js';
import { cpuWindow, type CpuReport } from './proc-cpu.js';

const args = parseArgs(process.argv.slice(2));
/** Namespace cleanups wait until the namespace is gone, so its deletion does not overlap the next window. */
const SETTLE = { wait: true, timeoutMs: 120_000 };
/** The local control plane's supervisor (undefined with BENCH_KUBECONFIG): its components' CPU is reported. */
let cpPid: number | undefined;
const CONCURRENCY = args.concurrency;
const POD_OPTIONS = {
  defaultImage: 'localhost/sandbox-platform/sandbox-agent:dev',
  defaultResources: { requests: { cpu: '100m', memory: '256Mi' }, limits: { cpu: '1', memory: '1Gi' } },
  defaultWorkspaceSize: '1Gi',
  tmpSize: '64Mi',
  runAsUser: 1000,
  terminationGracePeriodSeconds: 10,
};

async function main(): Promise<void> {
  const external = process.env.BENCH_KUBECONFIG;
  const cp = external ? undefined : await startControlPlane();
  cpPid = cp?.pid;
  process.env.KUBECONFIG = external ?? cp!.kubeconfig;
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(process.env.KUBECONFIG);
  try {
    await applyCrds(kc);
    console.log(
      `node ${process.version}, ${availableParallelism()} CPUs, load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
    console.log(
      `operator ${process.env.OPERATOR_MAIN ?? 'operator/dist/main.js'}, CONCURRENCY=${CONCURRENCY}; ` +
        `baseline uses ${CONCURRENCY} workers on the same client setup\n`,
    );
    const results = [];
    for (let round = 1; round <= args.rounds; round++) results.push(await provisioningRound(kc, round));
    summarize(results);
    if (args.rss.length > 0) await rss(kc, args.rss);
  } finally {
    await cp?.stop();
  }
}

interface Round {
  directMs: number;
  operatorMs: number;
  reconciles: number;
  backlogMs: number;
  /** What a zero-cost operator could reach at best on this machine (see provisioningRound). */
  floorMs: number;
  /** What an operator spending the client's CPU on the creates would reach (see provisioningRound). */
  sameCostMs: number;
}

async function provisioningRound(kc: k8s.KubeConfig, round: number): Promise<Round> {
  const core = createKubeClients(kc, { timeoutMs: 60_000, maxSockets: CONCURRENCY * 2 + 8 }).core;
  const plain = kc.makeApiClient(k8s.CoreV1Api);
  const names = Array.from({ length: args.sessions }, (_, i) => `b${round}-${String(i).padStart(4, '0')}`);
  const direct = await createTestNamespace(plain, { prefix: 'bench-direct' });
  const viaOperator = await createTestNamespace(plain, { prefix: 'bench-op' });
  const op = startOperator({
    namespace: viaOperator.name,
    env: { LOG_LEVEL: 'info', CONCURRENCY: String(CONCURRENCY) },
    nodeArgs: args.profile ? ['--cpu-prof', `--cpu-prof-dir=${args.profile}`] : [],
  });
  try {
    await op.waitForLog((l) => l.message === 'controller started', 60_000);

    const c1 = await countChildren(kc, direct.name);
    const rq1 = await requestCounts(kc);
    const cpu1 = cpuWindow({ 'bench client': process.pid }, cpPid);
    const t1 = Date.now();
    await createDirectly(core, direct.name, names, {
      workers: CONCURRENCY,
      masterKey: readMasterKeyFile(masterKeyFile()),
      pod: POD_OPTIONS,
    });
    const directMs = (await c1.reached(names.length, 120_000)) - t1;
    const directCpu = cpu1();
    c1.stop();
    const directCalls = requestDelta(rq1, await requestCounts(kc));
    console.log(
      `round ${round}: direct ${directMs} ms | CPU ${directCpu.totalMs} ms (${cores(directCpu, directMs)} cores): ` +
        `${directCpu.text} | calls: ${directCalls}`,
    );

    const crOnly = await crCreatesAlone(kc, names);

    const sessions = new Sessions(k8sCustom(kc), viaOperator.name);
    const before = await reconcileCount(op);
    const c2 = await countChildren(kc, viaOperator.name);
    const rq2 = await requestCounts(kc);
    const cpu2 = cpuWindow({ operator: op.pid, 'bench client': process.pid }, cpPid);
    const t2 = Date.now();
    await Promise.all(names.map((n) => sessions.create(n)));
    const createdMs = Date.now() - t2;
    const operatorMs = (await c2.reached(names.length, 300_000)) - t2;
    c2.stop();
    const reconciles = (await reconcileCount(op)) - before;
    const operatorCpu = cpu2();
    const operatorCalls = requestDelta(rq2, await requestCounts(kc));
    console.log(
      `round ${round}: direct ${directMs} ms | operator ${operatorMs} ms (the ${names.length} session creates took ${createdMs} ms) | ` +
        `ratio ${(operatorMs / directMs).toFixed(2)} | ${reconciles} reconciles | CPU ${operatorCpu.totalMs} ms ` +
        `(${cores(operatorCpu, operatorMs)} cores): ${operatorCpu.text} | load ${loadavg()[0]!.toFixed(2)}`,
    );
    console.log(`round ${round}: calls in the operator window: ${operatorCalls}`);
    // What the window would take if the operator process itself had cost nothing, everything else
    // (API server, etcd, controller-manager, client) as measured, at the same core usage.
    const others = operatorCpu.totalMs - (operatorCpu.byName.get('operator') ?? 0);
    const othersMs = others / (operatorCpu.totalMs / operatorMs);
    console.log(
      `round ${round}: without the operator's own CPU (${others} ms of the rest at the same core usage) ` +
        `the window would take ${othersMs.toFixed(0)} ms, ratio ${(othersMs / directMs).toFixed(2)}`,
    );
    // Two references for the operator window on a CPU-bound machine (all cores busy in the direct
    // window): both add the CPU of the client's CR creates (which the direct baseline does not
    // make) to the direct window's, spread over all cores.
    // - "as costly as the client": the operator spends on its creates exactly what the bench
    //   client spent on the same creates (the whole direct window's CPU);
    // - floor: the operator costs nothing (the direct window's CPU without the bench client's;
    //   its watch counting is left out too, so this is a lower bound).
    const n = availableParallelism();
    const crCpu = crOnly.cpu.totalMs;
    const clientCpu = directCpu.byName.get('bench client') ?? 0;
    const sameCostMs = Math.max(directMs, (directCpu.totalMs + crCpu) / n);
    const floorMs = Math.max(crOnly.ms, (directCpu.totalMs - clientCpu + crCpu) / n);
    console.log(
      `round ${round}: the ${names.length} session creates alone (no operator watching) took ${crOnly.ms} ms ` +
        `(${(crOnly.ms / directMs).toFixed(2)} of direct), CPU ${crCpu} ms: ${crOnly.cpu.text}`,
    );
    console.log(
      `round ${round}: references on ${n} cores: an operator as costly as the client ${sameCostMs.toFixed(0)} ms ` +
        `(ratio ${(sameCostMs / directMs).toFixed(2)}), a zero-cost operator ${floorMs.toFixed(0)} ms (ratio ${(floorMs / directMs).toFixed(2)})`,
    );
    const backlogMs = await backlogRound(kc, names, round);
    return { directMs, operatorMs, reconciles, backlogMs, floorMs, sameCostMs };
  } finally {
    await op.stop('SIGTERM');
    await Promise.all([direct.cleanup(SETTLE), viaOperator.cleanup(SETTLE)]);
  }
}

/**
 * The reconcile cost alone: the sessions exist before the operator starts (a backlog, as after an
 * outage), so the client's CR creates are not in the window. Timed from the operator's
 * "controller started" (caches synced, sources running) to the last Secret/Pod.
 */
async function backlogRound(kc: k8s.KubeConfig, names: readonly string[], round: number): Promise<number> {
  const plain = kc.makeApiClient(k8s.CoreV1Api);
  const ns = await createTestNamespace(plain, { prefix: 'bench-backlog' });
  const sessions = new Sessions(k8sCustom(kc), ns.name);
  let op: OperatorProcess | undefined;
  try {
    for (let i = 0; i < names.length; i += 50)
      await Promise.all(names.slice(i, i + 50).map((n) => sessions.create(n)));
    const counter = await countChildren(kc, ns.name);
    op = startOperator({ namespace: ns.name, env: { LOG_LEVEL: 'info', CONCURRENCY: String(CONCURRENCY) } });
    const started = await op.waitForLog((l) => l.message === 'controller started', 60_000);
    const t0 = Date.parse(String(started.time));
    const last = await counter.reached(names.length, 300_000);
    counter.stop();
    const backlogMs = last - t0;
    console.log(
      `round ${round}: backlog of ${names.length} existing sessions drained in ${backlogMs} ms after "controller started"`,
    );
    return backlogMs;
  } finally {
    await op?.stop('SIGTERM');
    await ns.cleanup(SETTLE);
  }
}

function summarize(rounds: Round[]): void {
  const med = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const direct = med(rounds.map((r) => r.directMs));
  const operator = med(rounds.map((r) => r.operatorMs));
  const backlog = med(rounds.map((r) => r.backlogMs));
  const floor = med(rounds.map((r) => r.floorMs / r.directMs));
  const sameCost = med(rounds.map((r) => r.sameCostMs / r.directMs));
  const n = args.sessions;
  const ratio = (a: number): string => (a / direct).toFixed(2);
  console.log(
    `\nmedian of ${rounds.length}: direct ${direct} ms, operator ${operator} ms, ratio ${ratio(operator)} (goal <= 1.2)`,
  );
  console.log(
    `median references: an operator as costly as the client ${sameCost.toFixed(2)}, a zero-cost operator ${floor.toFixed(2)} ` +
      `(the client's CR creates need CPU too)`,
  );
  console.log(
    `median backlog drain (the CR creates not in the window): ${backlog} ms, ratio ${ratio(backlog)}`,
  );
  const perS = (ms: number): string => ((n * 1000) / ms).toFixed(1);
  console.log(
    `throughput: ${perS(operator)} sessions/s provisioned via the operator (${perS(backlog)}/s from a backlog), ` +
      `${perS(direct)} Secret+Pod pairs/s directly`,
  );
  const recPerS = rounds.map((r) => ((r.reconciles * 1000) / r.operatorMs).toFixed(1));
  console.log(`reconciles per second during provisioning (per round): ${recPerS.join(', ')}\n`);
}

async function rss(kc: k8s.KubeConfig, targets: number[]): Promise<void> {
  const plain = kc.makeApiClient(k8s.CoreV1Api);
  const ns = await createTestNamespace(plain, { prefix: 'bench-rss' });
  const op = startOperator({
    namespace: ns.name,
    env: { LOG_LEVEL: 'info', CONCURRENCY: String(CONCURRENCY), ...args.operatorEnv },
  });
  const sessions = new Sessions(k8sCustom(kc), ns.name);
  try {
    await op.waitForLog((l) => l.message === 'operator starting', 60_000);
    await new Promise((r) => setTimeout(r, 3_000));
    const env =
      Object.entries(args.operatorEnv)
        .map(([k, v]) => `${k}=${v}`)
        .join(' ') || '(no extra environment)';
    console.log(`RSS phase, operator environment: ${env}`);
    console.log(`operator RSS with 0 sessions: ${mb(rssOf(op))} MB`);
    const counter = await countChildren(kc, ns.name);
    let created = 0;
    for (const target of targets) {
      const t0 = Date.now();
      while (created < target) {
        const batch = Array.from(
          { length: Math.min(50, target - created) },
          (_, i) => `r-${String(created + i).padStart(5, '0')}`,
        );
        await Promise.all(batch.map((n) => sessions.create(n)));
        created += batch.length;
      }
      await counter.reached(target, 900_000);
      const provisionedS = (Date.now() - t0) / 1000;
      await new Promise((r) => setTimeout(r, 15_000));
      const metrics = (await op.get('/metrics')).body;
      console.log(
        `operator with ${target} sessions (${target} Pods, ${target} Secrets): RSS ${mb(rssOf(op))} MB, ` +
          `heap used ${mb(metric(metrics, 'nodejs_heap_size_used_bytes'))} MB of ${mb(metric(metrics, 'nodejs_heap_size_total_bytes'))} MB, ` +
          `external ${mb(metric(metrics, 'nodejs_external_memory_bytes'))} MB ` +
          `(provisioned in ${provisionedS.toFixed(0)} s; goal at 5,000: <= 200 MB RSS)`,
      );
    }
    counter.stop();
  } finally {
    await op.stop('SIGTERM');
    await ns.cleanup();
  }
}

/**
 * The cost of the client's CR creates by themselves: the same N sessions created at once in a
 * namespace no operator watches (part of the floor the operator path cannot go below on a CPU-bound
 * control plane: the direct baseline does not make these creates).
 */
async function crCreatesAlone(
  kc: k8s.KubeConfig,
  names: readonly string[],
): Promise<{ ms: number; cpu: CpuReport }> {
  const plain = kc.makeApiClient(k8s.CoreV1Api);
  const ns = await createTestNamespace(plain, { prefix: 'bench-cr-only' });
  try {
    const sessions = new Sessions(k8sCustom(kc), ns.name);
    const cpu = cpuWindow({ 'bench client': process.pid }, cpPid);
    const t0 = Date.now();
    await Promise.all(names.map((n) => sessions.create(n)));
    const ms = Date.now() - t0;
    return { ms, cpu: cpu() };
  } finally {
    // Waits: the namespace controller deleting 200 sessions must not overlap the next window.
    await ns.cleanup(SETTLE);
  }
}

function cores(cpu: CpuReport, wallMs: number): string {
  return (cpu.totalMs / wallMs).toFixed(2);
}

function k8sCustom(kc: k8s.KubeConfig): k8s.CustomObjectsApi {
  return createKubeClients(kc, { timeoutMs: 60_000, maxSockets: CONCURRENCY * 2 + 8 }).custom;
}

async function reconcileCount(op: OperatorProcess): Promise<number> {
  const body = (await op.get('/metrics')).body;
  return [...body.matchAll(/^sandbox_operator_reconcile_duration_seconds_count\{[^}]*\} (\d+)/gm)].reduce(
    (a, m) => a + Number(m[1]),
    0,
  );
}

function rssOf(op: OperatorProcess): number {
  const status = readFileSync(`/proc/${op.pid}/status`, 'utf8');
  const kb = /^VmRSS:\s+(\d+) kB/m.exec(status)?.[1];
  return Number(kb) * 1024;
}

function metric(body: string, name: string): number {
  return Number(new RegExp(`^${name} (\\S+)`, 'm').exec(body)?.[1] ?? NaN);
}

function mb(bytes: number): string {
  return (bytes / 1024 / 1024).toFixed(1);
}

function parseArgs(argv: string[]): {
  sessions: number;
  rounds: number;
  rss: number[];
  concurrency: number;
  operatorEnv: Record<string, string>;
  profile: string;
} {
  const get = (flag: string, fallback: string): string => {
    const i = argv.indexOf(flag);
    return i >= 0 && argv[i + 1] !== undefined ? argv[i + 1]! : fallback;
  };
  return {
    sessions: Number(get('--sessions', '200')),
    rounds: Number(get('--rounds', '3')),
    concurrency: Number(get('--concurrency', '16')),
    profile: get('--profile', ''),
    // --operator-env NODE_OPTIONS=--max-semi-space-size=4,MALLOC_ARENA_MAX=2 (RSS phase only)
    operatorEnv: Object.fromEntries(
      get('--operator-env', '')
        .split(',')
        .filter(Boolean)
        .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
    ),
    rss: get('--rss', '1000,5000').split(',').filter(Boolean).map(Number),
  };
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
