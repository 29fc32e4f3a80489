/**
 * One burst: N creates as fast as the minimal client's workers go, then the wait until every one
 * is Ready, as this process sees it through a watch. Two kinds, measured the same way:
 *
 * - sessions: N SandboxSessions pinned to the simulated nodes; the operator creates each one's
 *   Secret and Pod, KWOK makes the Pod Ready, the operator writes Ready;
 * - floor: the same N Secret + Pod pairs (the operator's own builders, without the owner
 *   reference) created by the client itself, Secret then Pod, ready when the Pod is Ready.
 *
 * Per object: create-to-Ready from the start of its (first) create call to the watch event that
 * showed it Ready. Failed creates are counted, not retried, and the burst waits only for the
 * others (the "push until it breaks" runs report them).
 */
import type * as k8s from '@kubernetes/client-node';
import { deriveToken, GROUP, PLURAL, VERSION, type SandboxSession } from '@sandbox-platform/api';

import { buildPod } from '../../../operator/src/resources/pod.js';
import type { PodBuildOptions } from '../../../operator/src/resources/pod-options.js';
import { buildSecret } from '../../../operator/src/resources/secret.js';
import type { KubeHttp } from './kube-http.js';
import { ReadyTracker } from './tracker.js';

/** Node selector and toleration of the simulated nodes (localkube's kwok.go). */
export const ON_SIMULATED_NODES = {
  nodeSelector: { type: 'kwok' },
  tolerations: [{ key: 'kwok.x-k8s.io/node', operator: 'Exists', effect: 'NoSchedule' }],
} as const;

/** The operator's Pod build options as the chart sets them (operator.sandboxDefaults). */
export const CHART_POD_OPTIONS: PodBuildOptions = {
  defaultImage: 'localhost/sandbox-platform/sandbox-agent:dev',
  defaultResources: { requests: { cpu: '100m', memory: '256Mi' }, limits: { cpu: '1', memory: '1Gi' } },
  defaultWorkspaceSize: '1Gi',
  tmpSize: '64Mi',
  runAsUser: 1000,
  terminationGracePeriodSeconds: 10,
  defaultRuntimeClassName: 'gvisor',
};

/** What a burst measured. */
export interface Burst {
  readonly n: number;
  /** First create started to last Ready seen. */
  readonly windowMs: number;
  /** Time until every create call had answered. */
  readonly createsMs: number;
  /** Create-to-Ready of each object that became Ready, ms, sorted. */
  readonly latencies: number[];
  readonly failures: number;
  readonly firstError?: string;
  readonly watchErrors: readonly string[];
}

/** Inputs of a burst. */
export interface BurstContext {
  readonly kc: k8s.KubeConfig;
  readonly http: KubeHttp;
  readonly namespace: string;
  readonly workers: number;
  /** Longest wait for the last Ready after the creates. */
  readonly timeoutMs: number;
  /**
   * Asked every 30 s: a reason to stop waiting (e.g. an operator container restarted: what gave
   * way in a push), or undefined to go on. The burst then ends with that reason as its error.
   */
  readonly giveUp?: () => Promise<string | undefined>;
}

/** Session spec of the bench: pinned to the simulated nodes, collected after idleSeconds. */
export function sessionSpec(idleSeconds: number): SandboxSession['spec'] {
  return { ...ON_SIMULATED_NODES, idleTimeoutSeconds: idleSeconds } as unknown as SandboxSession['spec'];
}

/** N SandboxSessions named `${prefix}-00000`...; leaves its tracker running when `keep` is given. */
export async function sessionBurst(
  ctx: BurstContext,
  prefix: string,
  n: number,
  idleSeconds: number,
  keep?: (tracker: ReadyTracker) => void,
): Promise<Burst> {
  const path = `/apis/${GROUP}/${VERSION}/namespaces/${ctx.namespace}/${PLURAL}`;
  const spec = sessionSpec(idleSeconds);
  return burst(ctx, path, n, keep, async (i, started) => {
    const name = nameOf(prefix, i);
    started(name);
    await ctx.http.post(path, {
      apiVersion: `${GROUP}/${VERSION}`,
      kind: 'SandboxSession',
      metadata: { name },
      spec,
    });
  });
}

/** The floor: N bare Secret + Pod pairs, as the operator would build them, from the client. */
export async function floorBurst(
  ctx: BurstContext,
  prefix: string,
  n: number,
  masterKey: Buffer,
): Promise<Burst> {
  const ns = ctx.namespace;
  return burst(ctx, `/api/v1/namespaces/${ns}/pods`, n, undefined, async (i, started) => {
    const name = nameOf(prefix, i);
    const uid = `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;
    const ref = { namespace: ns, name, uid };
    const session: SandboxSession = { metadata: { namespace: ns, name, uid }, spec: sessionSpec(0) };
    const pod = unowned(buildPod(session, ref, CHART_POD_OPTIONS));
    started(pod.metadata!.name!);
    await ctx.http.post(
      `/api/v1/namespaces/${ns}/secrets`,
      unowned(buildSecret(ref, deriveToken(masterKey, ref))),
    );
    await ctx.http.post(`/api/v1/namespaces/${ns}/pods`, pod);
  });
}

/** Name of object i of a burst. */
export function nameOf(prefix: string, i: number): string {
  return `${prefix}-${String(i).padStart(5, '0')}`;
}

async function burst(
  ctx: BurstContext,
  watchPath: string,
  n: number,
  keep: ((tracker: ReadyTracker) => void) | undefined,
  create: (i: number, started: (name: string) => void) => Promise<void>,
): Promise<Burst> {
  const tracker = await ReadyTracker.start(ctx.kc, ctx.http, watchPath);
  const startedAt = new Map<string, number>();
  let failures = 0;
  let firstError: string | undefined;
  const t0 = Date.now();
  let next = 0;
  let gaveUp: string | undefined;
  // A burst of 10,000 takes minutes: say where it is every 30 s (stderr; the report is stdout).
  const progress = setInterval(() => {
    const { ready } = tracker.counts();
    process.stderr.write(
      `  [${Math.round((Date.now() - t0) / 1000)} s] ${Math.min(next, n)}/${n} created, ${failures} failed, ${ready} Ready\n`,
    );
    void ctx.giveUp?.().then(
      (reason) => (gaveUp ??= reason),
      () => undefined,
    );
  }, 30_000);
  const worker = async (): Promise<void> => {
    while (next < n) {
      const i = next++;
      try {
        await create(i, (name) => startedAt.set(name, Date.now()));
      } catch (err) {
        failures++;
        firstError ??= err instanceof Error ? err.message : String(err);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(ctx.workers, n) }, worker));
  const createsMs = Date.now() - t0;
  const want = n - failures;
  try {
    await tracker.until(
      () => gaveUp !== undefined || tracker.counts().ready >= want,
      ctx.timeoutMs,
      () => `${want} Ready (${tracker.counts().ready} so far)`,
    );
  } catch (err) {
    firstError ??= err instanceof Error ? err.message : String(err);
  }
  clearInterval(progress);
  if (gaveUp !== undefined) firstError ??= `stopped waiting: ${gaveUp}`;
  const latencies: number[] = [];
  let last = t0;
  for (const [name, s] of tracker.seen) {
    const started = startedAt.get(name);
    if (s.readyAt === undefined || started === undefined) continue;
    latencies.push(s.readyAt - started);
    last = Math.max(last, s.readyAt);
  }
  latencies.sort((a, b) => a - b);
  if (keep) keep(tracker);
  else tracker.stop();
  return { n, windowMs: last - t0, createsMs, latencies, failures, firstError, watchErrors: tracker.errors };
}

/** The object without ownerReferences: no SandboxSession owns the floor's children. */
function unowned<T extends { metadata?: k8s.V1ObjectMeta }>(obj: T): T {
  return { ...obj, metadata: { ...obj.metadata, ownerReferences: undefined } };
}
