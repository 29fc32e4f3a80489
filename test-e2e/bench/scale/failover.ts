/**
 * Leader failover under load: the leader's node process is SIGKILLed (no Lease release, nothing
 * finished: a crash), a canary session is created at that moment, and the bench measures until
 * the canary is Ready (reconciles flow again) and who holds the Lease then. Two ways to lose the
 * leader:
 *
 * - `crash`: only the process dies; the kubelet restarts the container in the same Pod, whose
 *   identity (the Pod name) still holds the Lease, so it takes it back at once;
 * - `pod-gone`: the Pod goes with it (force-deleted right after the kill, as when its node is
 *   lost): the standby takes over once the Lease expires, against the replacement Pod.
 *
 * Then every session must have exactly one Pod and one Secret, and no Pod or Secret may belong to
 * no session (children counted by their controller ownerReference's uid).
 */
import type * as k8s from '@kubernetes/client-node';
import { GROUP, LABELS, MANAGER_NAME, PLURAL, VERSION } from '@sandbox-platform/api';

import { sigkill } from '@sandbox-platform/test-support';
import { sessionSpec } from './bursts.js';
import type { KubeHttp } from './kube-http.js';
import { leaderProcess, leaseHolder } from './platform.js';
import { ReadyTracker } from './tracker.js';

/** What a failover measured. */
export interface Failover {
  readonly mode: FailoverMode;
  readonly killed: string;
  readonly newLeader?: string;
  /** Kill to the standby holding the Lease. */
  readonly leaseMs?: number;
  /** Kill to the canary session Ready. */
  readonly readyMs?: number;
  readonly check: ChildCheck;
  readonly error?: string;
}

/** Children per session after the failover. */
export interface ChildCheck {
  readonly sessions: number;
  readonly pods: number;
  readonly secrets: number;
  /** Sessions with more than one Pod or Secret. */
  readonly duplicates: number;
  /**
   * Pods or Secrets whose owner is no session and that the garbage collector has not removed
   * within ORPHAN_GRACE_MS (children of sessions being collected go then).
   */
  readonly orphans: number;
  /** Children of deleted sessions that the garbage collector removed within ORPHAN_GRACE_MS. */
  readonly collected: number;
  /** Sessions without a Pod or without a Secret. */
  readonly missing: number;
}

/** How the leader is lost. */
export type FailoverMode = 'crash' | 'pod-gone';

/** Kills the leader, creates `canary`, waits at most `timeoutMs` for it to be Ready. */
export async function failover(
  kc: k8s.KubeConfig,
  core: k8s.CoreV1Api,
  http: KubeHttp,
  opts: {
    readonly mode: FailoverMode;
    readonly namespace: string;
    readonly operatorNamespace: string;
    readonly canary: string;
    readonly idleSeconds: number;
    readonly timeoutMs: number;
  },
): Promise<Failover> {
  const path = `/apis/${GROUP}/${VERSION}/namespaces/${opts.namespace}/${PLURAL}`;
  const leader = await leaderProcess(kc, core);
  const tracker = await ReadyTracker.start(kc, http, path);
  let newLeader: string | undefined;
  let leaseMs: number | undefined;
  let readyMs: number | undefined;
  let error: string | undefined;
  const t0 = Date.now();
  sigkill([leader]);
  try {
    if (opts.mode === 'pod-gone') {
      await core.deleteNamespacedPod({
        name: leader.pod,
        namespace: opts.operatorNamespace,
        gracePeriodSeconds: 0,
      });
    }
    await http.post(path, {
      apiVersion: `${GROUP}/${VERSION}`,
      kind: 'SandboxSession',
      metadata: { name: opts.canary },
      spec: sessionSpec(opts.idleSeconds),
    });
    const deadline = t0 + opts.timeoutMs;
    while (Date.now() < deadline && readyMs === undefined) {
      const holder = leaseMs === undefined ? await leaseHolder(kc).catch(() => undefined) : undefined;
      if (holder && holder !== leader.pod) {
        newLeader = holder;
        leaseMs = Date.now() - t0;
      }
      const readyAt = tracker.seen.get(opts.canary)?.readyAt;
      if (readyAt !== undefined) readyMs = readyAt - t0;
      else await new Promise((r) => setTimeout(r, 100));
    }
    newLeader ??= await leaseHolder(kc).catch(() => undefined);
    if (readyMs === undefined) error = `canary not Ready within ${opts.timeoutMs} ms`;
  } catch (err) {
    error = err instanceof Error ? err.message : String(err);
  } finally {
    tracker.stop();
  }
  const check = await checkChildren(http, opts.namespace);
  return { mode: opts.mode, killed: leader.pod, newLeader, leaseMs, readyMs, check, error };
}

type Item = {
  metadata?: { name?: string; uid?: string; ownerReferences?: Array<{ uid?: string; controller?: boolean }> };
};

/** Every item of a collection, page by page. */
export async function listAll(http: KubeHttp, path: string, query = ''): Promise<Item[]> {
  const items: Item[] = [];
  let cont = '';
  do {
    const page = (await http.get(
      `${path}?limit=500${query ? `&${query}` : ''}${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`,
    )) as { items?: Item[]; metadata?: { continue?: string } };
    items.push(...(page.items ?? []));
    cont = page.metadata?.continue ?? '';
  } while (cont);
  return items;
}

/**
 * How long a child whose owner is gone may stay before it counts as an orphan: the garbage
 * collector removes the children of deleted sessions (idle GC runs during the failovers) with
 * some lag.
 */
const ORPHAN_GRACE_MS = 60_000;

/**
 * Counts each session's Pods and Secrets by controller ownerReference; children whose owner is no
 * session are looked at again until ORPHAN_GRACE_MS has passed, and only those still there count.
 */
export async function checkChildren(http: KubeHttp, namespace: string): Promise<ChildCheck> {
  const selector = `labelSelector=${encodeURIComponent(`${LABELS.managedBy}=${MANAGER_NAME}`)}`;
  const children = async (): Promise<[Item[], Item[]]> =>
    Promise.all([
      listAll(http, `/api/v1/namespaces/${namespace}/pods`, selector),
      listAll(http, `/api/v1/namespaces/${namespace}/secrets`, selector),
    ]);
  const [sessions, [pods, secrets]] = await Promise.all([
    listAll(http, `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/${PLURAL}`),
    children(),
  ]);
  const live = new Set(sessions.map((s) => s.metadata?.uid));
  const ownerless = (items: Item[]): Set<string> =>
    new Set(
      items
        .filter((c) => !live.has(c.metadata?.ownerReferences?.find((o) => o.controller)?.uid))
        .map((c) => c.metadata?.uid ?? ''),
    );
  const first = ownerless([...pods, ...secrets]);
  let left = first;
  for (const until = Date.now() + ORPHAN_GRACE_MS; left.size > 0 && Date.now() < until;) {
    await new Promise((r) => setTimeout(r, 2000));
    const now = ownerless((await children()).flat());
    left = new Set([...left].filter((uid) => now.has(uid)));
  }
  const count = (items: Item[]): Map<string, number> => {
    const per = new Map<string, number>();
    for (const c of items) {
      const owner = c.metadata?.ownerReferences?.find((o) => o.controller)?.uid;
      if (owner && live.has(owner)) per.set(owner, (per.get(owner) ?? 0) + 1);
    }
    return per;
  };
  const podsPer = count(pods);
  const secretsPer = count(secrets);
  let duplicates = 0;
  let missing = 0;
  for (const uid of live) {
    const p = podsPer.get(uid!) ?? 0;
    const s = secretsPer.get(uid!) ?? 0;
    if (p > 1 || s > 1) duplicates++;
    if (p === 0 || s === 0) missing++;
  }
  return {
    sessions: sessions.length,
    pods: pods.length,
    secrets: secrets.length,
    duplicates,
    orphans: left.size,
    collected: first.size - left.size,
    missing,
  };
}
