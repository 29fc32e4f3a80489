/**
 * `make bench-scale` (issue 32): sessions by the thousand on the local cluster's simulated nodes
 * (localkube's KWOK add-on: `make cluster-up LOCALKUBE_KWOK_NODES=100`), side by side with the
 * floor of the same number of bare Secret + Pod creates, through the bench's own Helm release of
 * the chart (platform.ts). Per size: the floor burst, then the same number of sessions; for each,
 * create-to-Ready p50/p99 and sessions per second, CPU by process, the operator's and gateways'
 * RSS, API calls per object by verb. At the largest size also: the gateway's lookup latency and
 * memory against 10 sessions, a leader failover (SIGKILL), and the idle GC of every session.
 * With --push, ever larger bursts until one fails: what gave way first.
 *
 *   --sizes 1000,5000,10000   burst sizes (the last one gets lookups, failover and idle GC)
 *   --workers 32              concurrent creates of the minimal client (both sides)
 *   --idle-seconds 600        idleTimeoutSeconds of the largest burst's sessions (at least 4x the floor's window)
 *   --push 15000,20000        push sizes, run after the others until one fails (default none)
 *   --keep                    leave the release installed afterwards (sessions are still deleted)
 *   --no-idle-gc              skip the largest burst's idle GC (about 30 min at 10,000; lookups and failover still run)
 * Environment: KUBECONFIG, HELM, CHART, LOCALKUBE_DIR; BENCH_SET and BENCH_SET_STRING: extra --set and
 * --set-string values of the release, separated by spaces.
 */
import { parseArgs } from 'node:util';

import * as k8s from '@kubernetes/client-node';
import { GROUP, PLURAL, VERSION } from '@sandbox-platform/api';

import { floorBurst, sessionBurst, type BurstContext } from './bursts.js';
import { failover } from './failover.js';
import { KubeHttp } from './kube-http.js';
import { lookups } from './lookups.js';
import { countersPerObject, heapUsedMb, memory, operatorCounters, startWindow } from './observe.js';
import {
  BENCH,
  componentPods,
  exemptFromOtherReleases,
  installRelease,
  leader,
  leaderProcess,
  nodeProcesses,
  restoreExemptions,
  uninstallRelease,
  type Exemption,
  type Tools,
} from './platform.js';
import { burstLine, compareLine, failoverLine, fixed, load, pct, windowLines } from './report.js';
import { idleGc, purge, simulatedNodes } from './lifecycle.js';

const { values: args } = parseArgs({
  options: {
    sizes: { type: 'string', default: '1000,5000,10000' },
    workers: { type: 'string', default: '32' },
    'idle-seconds': { type: 'string', default: '600' },
    push: { type: 'string', default: '' },
    keep: { type: 'boolean', default: false },
    'no-idle-gc': { type: 'boolean', default: false },
  },
});
const sizes = args.sizes.split(',').map(Number);
const pushSizes = args.push ? args.push.split(',').map(Number) : [];
const WORKERS = Number(args.workers);
const IDLE = Number(args['idle-seconds']);
const LOCALKUBE_DIR = process.env.LOCALKUBE_DIR ?? '.localkube';
/** Bindings of other releases the bench exempted its namespace from (restored at the end). */
const exemptions: Exemption[] = [];
const SESSIONS_PATH = `/apis/${GROUP}/${VERSION}/namespaces/${BENCH.sandboxNamespace}/${PLURAL}`;

function words(v: string | undefined): string[] {
  return (v ?? '').split(/\s+/).filter(Boolean);
}

function env(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set (run through make bench-scale)`);
  return v;
}

async function main(): Promise<void> {
  const tools: Tools = { helm: env('HELM'), chart: env('CHART'), kubeconfig: env('KUBECONFIG') };
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(tools.kubeconfig);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const nodes = await simulatedNodes(core);
  if (nodes === 0)
    throw new Error(
      'no simulated node is Ready: restart the cluster with them (make cluster-down; make cluster-up LOCALKUBE_KWOK_NODES=100)',
    );
  console.log(
    `bench-scale: ${nodes} simulated nodes, sizes ${sizes.join(', ')}, ${WORKERS} workers, idle timeout ${IDLE} s; ${load()}`,
  );
  const http = await KubeHttp.from(kc, WORKERS + 4);
  await exempt(kc);
  try {
    const apiKey = installRelease(tools, words(process.env.BENCH_SET), words(process.env.BENCH_SET_STRING));
    await ensureFloorNamespace(core);
    const ctx = (namespace: string, n: number): BurstContext => ({
      kc,
      http,
      namespace,
      workers: WORKERS,
      timeoutMs: 120_000 + n * 60,
    });
    const gateway = await gatewayUrl(core);
    const small = await gatewayAt(kc, core, http, {
      gateway,
      apiKey,
      n: 10,
      ctx: ctx(BENCH.sandboxNamespace, 10),
    });
    const largest = sizes[sizes.length - 1]!;
    for (const n of sizes) {
      const ok = await sizeRound(
        kc,
        core,
        http,
        ctx,
        n,
        n === largest ? { gateway, apiKey, small } : undefined,
      );
      if (!ok) return;
    }
    for (const n of pushSizes) {
      // Ready at 5 sessions a second or better (11/s at 10,000 here): slower is a failure too.
      const c = { ...ctx(BENCH.sandboxNamespace, n), timeoutMs: 120_000 + n * 200 };
      if (!(await pushRound(kc, core, http, c, n))) break;
    }
  } finally {
    await purge(http, SESSIONS_PATH, BENCH.sandboxNamespace).catch((e: unknown) =>
      console.error('purge sessions:', e),
    );
    await core.deleteNamespace({ name: BENCH.floorNamespace }).catch(() => undefined);
    if (!args.keep) uninstallRelease(tools);
    await restoreExemptions(kc, exemptions);
    http.close();
  }
}

type Ctx = (namespace: string, n: number) => BurstContext;
interface Gateway {
  readonly gateway: URL;
  readonly apiKey: string;
  readonly small: { p50: number; rssMb: number };
}

/**
 * Exempts the bench's namespace from other releases' refusal (again before each burst: another
 * `helm upgrade` of the platform release puts its own list back).
 */
async function exempt(kc: k8s.KubeConfig): Promise<void> {
  for (const e of await exemptFromOtherReleases(kc)) {
    if (!exemptions.some((x) => x.binding === e.binding)) exemptions.push(e);
  }
}

/** Floor, then sessions, of one size; at the largest also lookups, failover and idle GC. */
async function sizeRound(
  kc: k8s.KubeConfig,
  core: k8s.CoreV1Api,
  http: KubeHttp,
  ctx: Ctx,
  n: number,
  last: Gateway | undefined,
): Promise<boolean> {
  const procs = await processes(kc, core);
  let end = await startWindow(kc, procs, LOCALKUBE_DIR);
  const floor = await floorBurst(ctx(BENCH.floorNamespace, n), 'f', n, Buffer.alloc(32, 7));
  console.log(burstLine('floor', floor));
  windowLines(await end(), n).forEach((l) => console.log(l));
  await purge(http, `/api/v1/namespaces/${BENCH.floorNamespace}/pods`, BENCH.floorNamespace, 'secrets');

  // The sessions' burst takes a few times the floor's (2.5x at 10,000 here): its wait for Ready,
  // and at the largest size its idle timeout, scale with the floor's window, so that no session
  // goes idle while its own burst is still being created (at 10,000 with 600 s they did: the idle
  // GC then deleted sessions inside the burst's window and the wait for all Ready timed out).
  const base = ctx(BENCH.sandboxNamespace, n);
  const sessionsCtx = { ...base, timeoutMs: Math.max(base.timeoutMs, 5 * floor.windowMs) };
  const idle = last ? Math.max(IDLE, Math.ceil((4 * floor.windowMs) / 1000)) : 3600;
  if (last && idle > IDLE)
    console.log(`  (idle timeout of this burst: ${idle} s, 4x the floor's window, instead of ${IDLE} s)`);

  await exempt(kc);
  end = await startWindow(kc, await processes(kc, core), LOCALKUBE_DIR);
  const leaderIp = (await leader(kc, core)).pod.status!.podIP!;
  const counters = await operatorCounters(leaderIp, 9090);
  const before = await restarts(core);
  let tracker: Parameters<NonNullable<Parameters<typeof sessionBurst>[4]>>[0] | undefined;
  const sessions = await sessionBurst(sessionsCtx, `s${n}`, n, idle, (t) => (tracker = t));
  console.log(burstLine('sessions', sessions));
  windowLines(await end(), n).forEach((l) => console.log(l));
  console.log(
    `  operator, per session: ${countersPerObject(counters, await operatorCounters(leaderIp, 9090), n)}`,
  );
  console.log(compareLine(n, floor, sessions));
  const restarted = restartedBetween(before, await restarts(core));
  if (restarted.length > 0) console.log(`  restarted during the burst: ${restarted.join(', ')}`);
  if (sessions.failures > 0 || sessions.latencies.length < n) {
    tracker?.stop();
    console.log(`stopping: the ${n} burst did not complete`);
    return false;
  }
  if (!last) {
    tracker?.stop();
    await purge(http, SESSIONS_PATH, BENCH.sandboxNamespace);
    return true;
  }
  const names = [...tracker!.seen.keys()];
  const big = await gatewayFigures(core, last.gateway, last.apiKey, names);
  console.log(
    `gateway at ${n}: lookup p50 ${fixed(big.p50)} ms (at 10: ${fixed(last.small.p50)} ms, ${(big.p50 / last.small.p50).toFixed(2)}x, ` +
      `goal <= 1.1x); RSS ${big.rssMb.toFixed(0)} MB (at 10: ${last.small.rssMb.toFixed(0)} MB); ${load()}`,
  );
  const op = await leaderProcess(kc, core);
  console.log(`operator at ${n}: RSS ${fixed(memory(op.pid)?.rssMb, 0)} MB (goal <= 400)`);
  for (const mode of ['crash', 'pod-gone'] as const) {
    const f = await failover(kc, core, http, {
      mode,
      namespace: BENCH.sandboxNamespace,
      operatorNamespace: BENCH.namespace,
      canary: `canary-${mode}-${n}`,
      idleSeconds: idle,
      timeoutMs: 180_000,
    });
    console.log(failoverLine(f));
    await waitOperatorsReady(core);
  }
  if (args['no-idle-gc']) console.log('idle GC: skipped (--no-idle-gc)');
  else console.log(await idleGc(tracker!, idle, n + 2));
  tracker!.stop();
  return true;
}

/** One push burst of sessions only; false when it failed (what gave way is printed). */
async function pushRound(
  kc: k8s.KubeConfig,
  core: k8s.CoreV1Api,
  http: KubeHttp,
  c: BurstContext,
  n: number,
): Promise<boolean> {
  await exempt(kc);
  const before = await restarts(core);
  const end = await startWindow(kc, await processes(kc, core), LOCALKUBE_DIR);
  // The first restart of a platform container is what gave way: no need to wait for the rest.
  const giveUp = async (): Promise<string | undefined> => {
    const restarted = restartedBetween(before, await restarts(core));
    return restarted.length > 0 ? `restarted: ${restarted.join(', ')}` : undefined;
  };
  const b = await sessionBurst({ ...c, giveUp }, `p${n}`, n, 3600);
  console.log(burstLine('push sessions', b));
  windowLines(await end(), n).forEach((l) => console.log(l));
  const restarted = restartedBetween(before, await restarts(core));
  if (restarted.length > 0) console.log(`restarted during the burst: ${restarted.join(', ')}`);
  await purge(http, SESSIONS_PATH, BENCH.sandboxNamespace);
  return b.failures === 0 && b.latencies.length === n && restarted.length === 0;
}

/** Lookup p50 and gateway RSS with `n` sessions created for it (then deleted). */
async function gatewayAt(
  kc: k8s.KubeConfig,
  core: k8s.CoreV1Api,
  http: KubeHttp,
  o: { gateway: URL; apiKey: string; n: number; ctx: BurstContext },
): Promise<{ p50: number; rssMb: number }> {
  const b = await sessionBurst(o.ctx, 'look', o.n, 3600);
  if (b.failures > 0 || b.latencies.length < o.n) console.log(burstLine('lookup sessions', b));
  const names = Array.from({ length: o.n }, (_, i) => `look-${String(i).padStart(5, '0')}`);
  const figures = await gatewayFigures(core, o.gateway, o.apiKey, names);
  console.log(
    `gateway at ${b.n} sessions: lookup p50 ${fixed(figures.p50)} ms, RSS ${figures.rssMb.toFixed(0)} MB; ${load()}`,
  );
  await purge(http, SESSIONS_PATH, BENCH.sandboxNamespace);
  void kc;
  return figures;
}

async function gatewayFigures(
  core: k8s.CoreV1Api,
  gateway: URL,
  apiKey: string,
  names: readonly string[],
): Promise<{ p50: number; p99: number; rssMb: number; heapMb: string }> {
  const l = await lookups(gateway, apiKey, BENCH.sandboxNamespace, names, { samples: 300, gapMs: 20 });
  if (l.failures > 0) console.log(`  lookups: ${l.failures} failed (first: ${l.firstError})`);
  const pods = await componentPods(core, 'gateway');
  const rss = nodeProcesses(pods).map((p) => memory(p.pid)?.rssMb ?? 0);
  const heaps = await Promise.all(pods.map((p) => heapUsedMb(p.status!.podIP!, 9090)));
  return {
    p50: pct(l.latencies, 50),
    p99: pct(l.latencies, 99),
    rssMb: Math.max(...rss),
    heapMb: heaps.map((h) => fixed(h, 0)).join('/'),
  };
}

/** The operator leader's and the gateways' node processes, by role. */
async function processes(kc: k8s.KubeConfig, core: k8s.CoreV1Api): Promise<Record<string, number>> {
  const out: Record<string, number> = { 'operator leader': (await leaderProcess(kc, core)).pid };
  nodeProcesses(await componentPods(core, 'gateway')).forEach((p, i) => (out[`gateway ${i + 1}`] = p.pid));
  return out;
}

/** Waits until both operator replicas run again (the next measurement needs a leader and a standby). */
async function waitOperatorsReady(core: k8s.CoreV1Api): Promise<void> {
  const deadline = Date.now() + 180_000;
  while (Date.now() < deadline) {
    const pods = await componentPods(core, 'operator');
    const ready = pods.filter((p) => p.status?.containerStatuses?.every((c) => c.ready));
    if (ready.length >= 2) return;
    await new Promise((r) => setTimeout(r, 1000));
  }
  console.log('  (the operator replicas were not both Ready within 3 min)');
}

/** Container restarts of the release's pods, by pod name, with the last termination of each. */
interface Restarts {
  readonly count: number;
  /** e.g. "operator: OOMKilled (exit 137) at 22:58:01Z"; empty when none terminated. */
  readonly last: string[];
}

async function restarts(core: k8s.CoreV1Api): Promise<Map<string, Restarts>> {
  const list = await core.listNamespacedPod({ namespace: BENCH.namespace });
  return new Map(
    list.items.map((p) => {
      const statuses = p.status?.containerStatuses ?? [];
      const last = statuses.flatMap((c) => {
        const t = c.lastState?.terminated;
        if (!t) return [];
        const at = t.finishedAt ? ` at ${new Date(t.finishedAt).toISOString().slice(11, 19)}Z` : '';
        return [`${c.name}: ${t.reason ?? 'terminated'} (exit ${t.exitCode})${at}`];
      });
      return [p.metadata!.name!, { count: statuses.reduce((s, c) => s + c.restartCount, 0), last }];
    }),
  );
}

/** The pods that restarted between two readings, each with why its container last stopped. */
function restartedBetween(before: Map<string, Restarts>, after: Map<string, Restarts>): string[] {
  return [...after]
    .filter(([pod, r]) => r.count > (before.get(pod)?.count ?? 0))
    .map(
      ([pod, r]) =>
        `${pod} (${r.count - (before.get(pod)?.count ?? 0)}x; ${r.last.join(', ') || 'no reason recorded'})`,
    );
}

async function gatewayUrl(core: k8s.CoreV1Api): Promise<URL> {
  const svc = await core.readNamespacedService({ name: BENCH.gatewayService, namespace: BENCH.namespace });
  return new URL(`http://${svc.spec!.clusterIP}:${svc.spec!.ports![0]!.port}`);
}

async function ensureFloorNamespace(core: k8s.CoreV1Api): Promise<void> {
  await core
    .createNamespace({
      body: {
        metadata: {
          name: BENCH.floorNamespace,
          labels: {
            'pod-security.kubernetes.io/enforce': 'restricted',
            'pod-security.kubernetes.io/enforce-version': 'latest',
          },
        },
      },
    })
    .catch((err: unknown) => {
      if (!(err instanceof k8s.ApiException && err.code === 409)) throw err;
    });
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
