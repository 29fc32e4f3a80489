/**
 * Benchmark of issues 14 and 27 (docs/adr/0016), side by side in one run on the local cluster,
 * through the in-cluster gateway: create-to-first-output, i.e. `POST /v1/sessions` (create-or-get)
 * then `POST /v1/sessions/<name>/exec` of `true` (the gateway waits for Ready, then runs it), timed
 * from the create to the exec's answer.
 *   warm: the session names a SandboxPool with warm Pods;
 *   warm+env: the same with 5 env values and 2 Secret references (secretEnv: the operator reads
 *     the two Secrets and the bind carries the 7 values);
 *   cold: a default session (no pool).
 * Rounds take `--batch` warm samples and as many warm+env ones, alternating, then as many cold
 * ones, one sample at a time; after each round the sessions are deleted and the pool (2 x
 * `--batch` Pods) is left to refill (untimed), so every warm sample finds a warm Pod. Goals (issue
 * 27): warm p50 <= 60 ms, warm+env p50 <= 1.1x warm, cold p50 >= 20x warm; the 1-minute load
 * average is printed with each round and each figure.
 *
 * Also measured, to show where the time goes: the create call alone, create to Ready as the API
 * server reports it (a watch on the session), an exec of `true` on a session that is Ready
 * already (the gateway and agent floor), the API server's floor (three serial writes, as a warm
 * claim makes, timed right before each warm sample), the floor of any controller in the path (a
 * create, a watcher's patch, the creator's watch seeing it: WatchFloor) and the operator's own claim latency
 * (sandbox_operator_pool_claim_duration_seconds, read through the API server's pod proxy).
 *
 * Needs `make platform-up` (platform.env).
 *   --samples N   warm and cold samples each (default 30)
 *   --batch B     warm Pods in the pool = warm samples per round (default 5; chosen when each
 *                 idle sandbox Pod ran an exec probe, a node process, every 2 s, and 10 starved the
 *                 local node's 2 CPUs; the probes are HTTP now, ADR 0024)
 *   --default-pool  the pool is the namespace default: warm sessions name no pool, cold ones an image
 */
import { randomBytes } from 'node:crypto';
import * as os from 'node:os';
import { parseArgs } from 'node:util';

import * as k8s from '@kubernetes/client-node';
import {
  CONDITIONS,
  GROUP,
  LABELS,
  PLURAL,
  POOL_PLURAL,
  VERSION,
  type SandboxPool,
  type SandboxSession,
} from '@sandbox-platform/api';

import { SandboxClient, UnavailableError } from '../../sdk/typescript/src/index.js';
import { kubeClients } from '../src/framework/index.js';
import { predicate, waitFor } from '@sandbox-platform/test-support';

// Not imported from specs/isolation/support.ts: that module pulls in @jest/globals (its notRun),
// which a bench bundle run by plain node cannot load (the bench failed to start since 43bbcda).
const AGENT_IMAGE = 'localhost/sandbox-platform/sandbox-agent:dev';
const uniqueName = (prefix: string): string => `${prefix}-${randomBytes(3).toString('hex')}`;

const { values } = parseArgs({
  options: {
    samples: { type: 'string', default: '30' },
    batch: { type: 'string', default: '5' },
    'default-pool': { type: 'boolean', default: false },
    'settle-ms': { type: 'string', default: '0' },
  },
});
/**
 * --settle-ms S: before each warm sample, wait until the pool is refilled (the previous claim's
 * replacement Pod Ready) and then S ms more, so a sample does not share the 2 CPUs with the
 * start of the Pod the previous claim's refill creates (a gVisor sandbox start: seconds of CPU).
 * 0 (default): the samples of a round follow each other, as before.
 */
const settleMs = Number(values['settle-ms']);
/**
 * --default-pool: the pool is the namespace default and warm sessions name no pool (cold ones set
 * the image explicitly, which no default pool takes): the same warm path without spec.poolRef.
 */
const viaDefault = values['default-pool'];
const N = Number(values.samples);
const B = Number(values.batch);
const ns = process.env.E2E_NAMESPACE ?? 'sandbox-e2e';
const kube = kubeClients();
const baseUrl = process.env.E2E_GATEWAY_URL;
const apiKey = process.env.E2E_GATEWAY_API_KEY;
if (!baseUrl || !apiKey) throw new Error('needs E2E_GATEWAY_URL and E2E_GATEWAY_API_KEY (make platform-up)');
const sbx = new SandboxClient({ baseUrl, apiKey, namespace: ns, timeoutMs: 300_000 });
const poolName = uniqueName('bench-pool');

const quantile = (sorted: number[], q: number): number =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
const now = (): bigint => process.hrtime.bigint();
const since = (t0: bigint, t1: bigint = now()): number => Number(t1 - t0) / 1e6;

interface Sample {
  total: number;
  create: number;
  ready?: number;
}

/** Watches sessions of the namespace and remembers when each first showed Ready=True. */
class ReadyWatch {
  readonly readyAt = new Map<string, bigint>();
  private abort?: AbortController;

  async start(): Promise<void> {
    const watch = new k8s.Watch(kube.kc);
    this.abort = await watch.watch(
      `/apis/${GROUP}/${VERSION}/namespaces/${ns}/${PLURAL}`,
      {},
      (_phase, obj: SandboxSession) => {
        const name = obj.metadata?.name;
        const ready = obj.status?.conditions?.find((c) => c.type === CONDITIONS.ready)?.status === 'True';
        if (name && ready && !this.readyAt.has(name)) this.readyAt.set(name, now());
      },
      () => undefined,
    );
  }

  stop(): void {
    this.abort?.abort();
  }
}

/** The env of a warm+env sample: 5 plain values and 2 Secret references (the Secrets made in main). */
const ENV_SAMPLE = {
  env: { E1: 'one', E2: 'two', E3: 'three', E4: 'four', E5: 'five' },
  secretEnv: {
    S1: { secret: 'bench-secret-1', key: 'value' },
    S2: { secret: 'bench-secret-2', key: 'value' },
  },
};

async function sample(
  name: string,
  pool: string | undefined,
  watch: ReadyWatch,
  withEnv = false,
): Promise<Sample> {
  const how = viaDefault ? (pool ? {} : { image: AGENT_IMAGE }) : pool ? { pool } : {};
  // secretEnv and its shape are newer than the SDK's request type; the SDK sends the body as is.
  const extra = (withEnv ? ENV_SAMPLE : {}) as object;
  const t0 = now();
  await sbx.createSession({ name, idleTimeoutSeconds: 600, ...how, ...extra });
  const created = now();
  const r = await execWhenReady(name);
  const done = now();
  if (r.exitCode !== 0) throw new Error(`${name}: exit ${r.exitCode}`);
  const readyAt = watch.readyAt.get(name);
  return {
    total: since(t0, done),
    create: since(t0, created),
    ready: readyAt === undefined ? undefined : since(t0, readyAt),
  };
}

/**
 * exec `true`, the gateway waiting for Ready (up to its maximum wait); on a busy node a cold Pod
 * can take longer, and its 503 session-not-ready is retried (the time counts).
 */
async function execWhenReady(name: string): Promise<{ exitCode: number }> {
  const deadline = Date.now() + 300_000;
  for (;;) {
    try {
      return await sbx.exec(name, { command: 'true', timeoutSeconds: 30, waitSeconds: 120 });
    } catch (err) {
      if (!(err instanceof UnavailableError) || err.code !== 'session-not-ready' || Date.now() > deadline)
        throw err;
    }
  }
}

/**
 * The API server's floor of a warm claim, as a ConfigMap create and two patches in the same
 * namespace, taken right before each warm sample so that both start from the same node (the pool
 * refilled, nothing else of the bench running; right after a sample the claim's refill Pod is
 * being created, which the claim itself no longer waits for: operator/src/pool/refill-hold.ts).
 * Since issue 27 a warm claim makes two writes one after another (the gateway's create of the
 * session, then the operator's status patch, written beside its claim patch as soon as the agent
 * accepted the bind): `two` is the first two writes, `three` the old floor (create, claim patch,
 * status patch in series). Returns ms; the ConfigMap is deleted.
 */
async function apiWriteFloor(): Promise<{ two: number; three: number }> {
  const name = uniqueName('bench-floor-cm');
  const patch = (v: string) =>
    kube.core.patchNamespacedConfigMap(
      { namespace: ns, name, body: { data: { v } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
  const t0 = now();
  await kube.core.createNamespacedConfigMap({
    namespace: ns,
    body: { metadata: { name }, data: { v: '0' } },
  });
  await patch('1');
  const two = since(t0);
  await patch('2');
  const three = since(t0);
  await kube.core.deleteNamespacedConfigMap({ namespace: ns, name });
  return { two, three };
}

/**
 * The floor of any design in which a controller answers a create (issue 27): the client creates
 * an object, a controller sees it on its own watch and patches it, and the client sees that patch
 * on its watch (as the gateway's informer sees Ready). Two writes and two watch deliveries in
 * series, timed right before each warm sample beside apiWriteFloor; plus the exec floor it is the
 * least a warm claim can take with the operator in the path. What a warm claim does beyond it: the
 * gateway's create call and informer, the operator's queue and reconcile, the signed bind (the
 * status waits for the agent's answer) and the claim patch beside the status write.
 */
class WatchFloor {
  private readonly waiting = new Map<string, () => void>();
  private readonly aborts: AbortController[] = [];
  private readonly path = `/api/v1/namespaces/${ns}/configmaps`;
  private readonly selector = { labelSelector: 'sandbox.dev/bench-floor=watch' };

  async start(): Promise<void> {
    // The controller's watch: a new object gets its answer patched in.
    this.aborts.push(
      await new k8s.Watch(kube.kc).watch(
        this.path,
        this.selector,
        (phase, cm: k8s.V1ConfigMap) => {
          if (phase !== 'ADDED' || cm.data?.v !== '0') return;
          void kube.core
            .patchNamespacedConfigMap(
              { namespace: ns, name: cm.metadata!.name!, body: { data: { v: '1' } } },
              k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
            )
            .catch((err: unknown) => console.error('watch floor: patch failed', err));
        },
        () => undefined,
      ),
    );
    // The client's watch (the gateway's informer): the answer arrived.
    this.aborts.push(
      await new k8s.Watch(kube.kc).watch(
        this.path,
        this.selector,
        (_phase, cm: k8s.V1ConfigMap) => {
          if (cm.data?.v === '1') this.waiting.get(cm.metadata?.name ?? '')?.();
        },
        () => undefined,
      ),
    );
  }

  /** ms from the create to the client's watch showing the controller's patch; the object is deleted. */
  async once(): Promise<number> {
    const name = uniqueName('bench-watch-floor');
    const seen = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('watch floor: no answer within 30 s')), 30_000);
      this.waiting.set(name, () => {
        clearTimeout(timer);
        resolve();
      });
    });
    const t0 = now();
    await kube.core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name, labels: { 'sandbox.dev/bench-floor': 'watch' } }, data: { v: '0' } },
    });
    await seen;
    const ms = since(t0);
    this.waiting.delete(name);
    await kube.core.deleteNamespacedConfigMap({ namespace: ns, name });
    return ms;
  }

  stop(): void {
    for (const a of this.aborts) a.abort();
  }
}

async function pool(): Promise<SandboxPool> {
  return (await kube.custom.getNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    plural: POOL_PLURAL,
    namespace: ns,
    name: poolName,
  })) as SandboxPool;
}

async function refilled(): Promise<void> {
  await waitFor(
    () => pool(),
    predicate(`${2 * B} warm Pods available`, (p) => (p.status?.available ?? 0) >= 2 * B),
    { timeoutMs: 300_000, intervalMs: 250 },
  );
}

/** With --settle-ms: the pool refilled, then that long with nothing of the bench running. */
async function settle(): Promise<void> {
  if (settleMs <= 0) return;
  await refilled();
  await new Promise((r) => setTimeout(r, settleMs));
}

async function gone(names: string[]): Promise<void> {
  await Promise.all(names.map((n) => sbx.deleteSession(n).catch(() => undefined)));
  await waitFor(
    async () => {
      let left = 0;
      for (const name of names) {
        const list = await kube.core.listNamespacedPod({
          namespace: ns,
          labelSelector: `${LABELS.session}=${name}`,
        });
        left += list.items.length;
      }
      return left;
    },
    predicate('their Pods gone', (left) => left === 0),
    { timeoutMs: 300_000, intervalMs: 500 },
  );
}

function summary(label: string, samples: number[]): { p50: number; p99: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  const p50 = quantile(sorted, 0.5);
  const p99 = quantile(sorted, 0.99);
  console.log(
    `  ${label.padEnd(44)} n=${String(sorted.length).padEnd(4)} p50 ${p50.toFixed(1)} ms  p99 ${p99.toFixed(1)} ms` +
      `  (min ${sorted[0]!.toFixed(1)}, max ${sorted.at(-1)!.toFixed(1)})`,
  );
  return { p50, p99 };
}

/** p50 of the operator's claim latency from its /metrics (histogram buckets), via the pod proxy. */
async function operatorClaimP50(): Promise<string> {
  const platformNs = process.env.E2E_PLATFORM_NAMESPACE ?? 'sandbox-system';
  const pods = await kube.core.listNamespacedPod({
    namespace: platformNs,
    labelSelector: 'app.kubernetes.io/component=operator',
  });
  for (const pod of pods.items) {
    try {
      const text = await kube.core.connectGetNamespacedPodProxyWithPath({
        name: `${pod.metadata!.name!}:9090`,
        namespace: platformNs,
        path: 'metrics',
      });
      const lines = String(text)
        .split('\n')
        .filter(
          (l) => l.startsWith('sandbox_operator_pool_claim_duration_seconds_bucket') && l.includes(poolName),
        );
      const buckets = lines.map((l) => ({
        le: Number(/le="([^"]+)"/.exec(l)?.[1] === '+Inf' ? Infinity : /le="([^"]+)"/.exec(l)?.[1]),
        n: Number(l.split(' ').at(-1)),
      }));
      const total = buckets.find((b) => b.le === Infinity)?.n ?? 0;
      if (total === 0) continue;
      const half = buckets.find((b) => b.n >= total / 2);
      return `p50 <= ${((half?.le ?? NaN) * 1000).toFixed(1)} ms (histogram bucket; ${total} claims, leader ${pod.metadata!.name})`;
    } catch {
      // Not the leader, or the proxy refused: try the next replica.
    }
  }
  return 'not available (metrics not reachable through the pod proxy)';
}

async function main(): Promise<void> {
  console.log(
    `\n== warm pool vs cold: create-or-get + exec \`true\` through the gateway (${N} samples each, pool of ${2 * B}` +
      `${viaDefault ? ', namespace default pool' : ''}; load ${loadavg()})`,
  );
  await kube.custom.createNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    plural: POOL_PLURAL,
    namespace: ns,
    body: {
      apiVersion: `${GROUP}/${VERSION}`,
      kind: 'SandboxPool',
      metadata: { name: poolName },
      spec: { replicas: 2 * B, namespaceDefault: viaDefault },
    },
  });
  for (const [i, secret] of ['bench-secret-1', 'bench-secret-2'].entries()) {
    // A run stopped before its clean-up leaves them behind; the values are the bench's own.
    await kube.core.deleteNamespacedSecret({ namespace: ns, name: secret }).catch(() => undefined);
    await kube.core.createNamespacedSecret({
      namespace: ns,
      body: { metadata: { name: secret }, stringData: { value: `secret-value-${i + 1}` } },
    });
  }
  const watch = new ReadyWatch();
  await watch.start();
  const watchFloor = new WatchFloor();
  await watchFloor.start();
  const warm: Sample[] = [];
  const warmEnv: Sample[] = [];
  const cold: Sample[] = [];
  const floor: number[] = [];
  const writes: number[] = [];
  const writesTwo: number[] = [];
  const watched: number[] = [];
  const loads: number[] = [];
  /** The same writes right after each warm sample (how records before 2026-12-02 04:45 UTC took the floor). */
  const writesAfter: number[] = [];
  try {
    await refilled();
    // The gateway's and the agent's floor: exec `true` on a session that is Ready already.
    const probe = uniqueName('bench-floor');
    await sample(probe, poolName, watch);
    for (let i = 0; i < 20; i++) {
      const t0 = now();
      await sbx.exec(probe, { command: 'true', timeoutSeconds: 30 });
      floor.push(since(t0));
    }
    // The env arrived (untimed): the warm+env kind is what it claims to be.
    const envProbe = uniqueName('bench-env');
    await sample(envProbe, poolName, watch, true);
    const echoed = await sbx.exec(envProbe, { command: 'echo $E1 $E5 $S1 $S2', timeoutSeconds: 30 });
    if (echoed.stdout !== 'one five secret-value-1 secret-value-2\n')
      throw new Error(`warm+env: the env did not arrive: ${JSON.stringify(echoed.stdout)}`);
    await gone([envProbe]);
    while (warm.length < N) {
      await refilled();
      loads.push(os.loadavg()[0]!);
      const round = Math.min(B, N - warm.length);
      const warmNames: string[] = [];
      // Alternating kinds: warm, warm+env, warm, ... each after its own floor writes.
      for (const withEnv of Array.from({ length: 2 * round }, (_, i) => i % 2 === 1)) {
        const name = uniqueName(withEnv ? 'bench-env' : 'bench-warm');
        warmNames.push(name);
        await settle();
        const floorWrites = await apiWriteFloor();
        writes.push(floorWrites.three);
        writesTwo.push(floorWrites.two);
        watched.push(await watchFloor.once());
        (withEnv ? warmEnv : warm).push(await sample(name, poolName, watch, withEnv));
        writesAfter.push((await apiWriteFloor()).three);
      }
      // The claimed Pods go before the cold samples: a node holds about 19 sandbox Pods (100m
      // each), and 2 x batch claimed + 2 x batch refilled left none for a cold Pod.
      await gone(warmNames);
      await refilled();
      const coldNames = Array.from({ length: round }, () => uniqueName('bench-cold'));
      for (const name of coldNames) {
        cold.push(await sample(name, undefined, watch));
        await gone([name]);
      }
      loads.push(os.loadavg()[0]!);
      console.log(`  ${warm.length}/${N} warm, warm+env and cold samples (load ${loadavg()})`);
    }
    const w = summary(
      'warm create-to-first-output',
      warm.map((s) => s.total),
    );
    const we = summary(
      'warm+env (5 values, 2 Secret refs)',
      warmEnv.map((s) => s.total),
    );
    const c = summary(
      'cold create-to-first-output',
      cold.map((s) => s.total),
    );
    const sorted = [...loads].sort((a, b) => a - b);
    console.log(
      `  1-minute load during the samples: min ${sorted[0]!.toFixed(1)}, median ${quantile(sorted, 0.5).toFixed(1)}, max ${sorted.at(-1)!.toFixed(1)}`,
    );
    console.log(
      `  warm p50 <= 60 ms: ${w.p50 <= 60 ? 'yes' : 'no'}; warm+env / warm p50 ${(we.p50 / w.p50).toFixed(2)}x ` +
        `(goal <= 1.1x); cold / warm p50 ${(c.p50 / w.p50).toFixed(1)}x (goal >= 20x), p99 ${(c.p99 / w.p99).toFixed(1)}x`,
    );
    console.log('  where the warm time goes:');
    summary(
      '  POST /v1/sessions (create-or-get)',
      warm.map((s) => s.create),
    );
    summary(
      '  create to Ready=True (API server watch)',
      warm.flatMap((s) => (s.ready === undefined ? [] : [s.ready])),
    );
    // Per sample, so that a claim that turns Ready sooner but execs later shows (ADR 0016).
    summary(
      '  Ready=True (watch) to first output',
      warm.flatMap((s) => (s.ready === undefined ? [] : [s.total - s.ready])),
    );
    const f = summary('  exec `true` on a Ready session (floor)', floor);
    const api2 = summary('  2 serial API writes before each warm sample', writesTwo);
    const api = summary('  3 serial API writes before each warm sample', writes);
    summary('  the 3 right after each warm sample', writesAfter);
    const wf = summary('  create, a watcher patches, the creator sees it', watched);
    console.log(
      `    floor of a warm claim since issue 27 (2 API writes + exec): p50 ${(api2.p50 + f.p50).toFixed(1)} ms; ` +
        `warm p50 / floor ${(w.p50 / (api2.p50 + f.p50)).toFixed(2)}x`,
    );
    console.log(
      `    the floor before (3 API writes + exec): p50 ${(api.p50 + f.p50).toFixed(1)} ms; ` +
        `warm p50 / that floor ${(w.p50 / (api.p50 + f.p50)).toFixed(2)}x`,
    );
    console.log(
      `    floor of any controller in the path (create -> watch -> patch -> watch, + exec): p50 ${(wf.p50 + f.p50).toFixed(1)} ms; ` +
        `warm p50 / that floor ${(w.p50 / (wf.p50 + f.p50)).toFixed(2)}x`,
    );
    console.log(`    operator claim (patch + bind): ${await operatorClaimP50()}`);
    summary(
      '  cold: create to Ready=True',
      cold.flatMap((s) => (s.ready === undefined ? [] : [s.ready])),
    );
    console.log(`  raw warm ms: ${warm.map((s) => s.total.toFixed(1)).join(' ')}`);
    console.log(`  raw warm+env ms: ${warmEnv.map((s) => s.total.toFixed(1)).join(' ')}`);
    console.log(`  raw cold ms: ${cold.map((s) => s.total.toFixed(1)).join(' ')}`);
  } finally {
    watch.stop();
    watchFloor.stop();
    await cleanUp();
  }
}

/** Deletes what the run created; also on Ctrl-C (a run stopped early left its pool behind). */
async function cleanUp(): Promise<void> {
  for (const secret of ['bench-secret-1', 'bench-secret-2'])
    await kube.core.deleteNamespacedSecret({ namespace: ns, name: secret }).catch(() => undefined);
  await kube.custom
    .deleteNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      plural: POOL_PLURAL,
      namespace: ns,
      name: poolName,
    })
    .catch(() => undefined);
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.error(`\n${signal}: deleting the bench's pool and Secrets`);
    void cleanUp().finally(() => process.exit(130));
  });
}

function loadavg(): string {
  return os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');
}

await main();
