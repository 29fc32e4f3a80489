/**
 * Around the bursts: the simulated nodes present, emptying a namespace between bursts (and
 * waiting until its children are really gone, so one burst's deletions do not run into the next
 * one's window), and the idle GC of the largest burst measured against its deadlines.
 */
import type * as k8s from '@kubernetes/client-node';
import { LABELS, MANAGER_NAME } from '@sandbox-platform/api';

import type { KubeHttp } from './kube-http.js';
import { fixed, load, pct } from './report.js';
import type { ReadyTracker } from './tracker.js';

/** Simulated nodes (type=kwok) whose Ready condition is True. */
export async function simulatedNodes(core: k8s.CoreV1Api): Promise<number> {
  const nodes = await core.listNode({ labelSelector: 'type=kwok' });
  return nodes.items.filter((n) =>
    n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
  ).length;
}

/** Objects of a collection (one LIST of one item: the rest is remainingItemCount). */
async function count(http: KubeHttp, path: string, selector?: string): Promise<number> {
  const q = selector ? `&labelSelector=${encodeURIComponent(selector)}` : '';
  const list = (await http.get(`${path}?limit=1${q}`)) as {
    items?: unknown[];
    metadata?: { remainingItemCount?: number };
  };
  return (list.items?.length ?? 0) + (list.metadata?.remainingItemCount ?? 0);
}

/** How often a purge asks again for the collection's deletion while objects are left. */
const DELETE_AGAIN_MS = 30_000;

/**
 * Deletes every object of `path` (a collection; `also`: another resource of the namespace, e.g.
 * the floor's secrets) and waits until the namespace holds no Pod or Secret of the operator's
 * labels and the collection is empty (at most 10 minutes). One DELETE of a collection of thousands
 * can outlast the API server's request timeout (5,000 Pods did: the connection was reset), so a
 * failed DELETE is logged and asked again every DELETE_AGAIN_MS while objects are left.
 */
export async function purge(http: KubeHttp, path: string, namespace: string, also?: string): Promise<void> {
  const t0 = Date.now();
  const selector = `${LABELS.managedBy}=${MANAGER_NAME}`;
  const deleteAll = async (): Promise<void> => {
    const paths = [
      path,
      ...(also
        ? [`/api/v1/namespaces/${namespace}/${also}?labelSelector=${encodeURIComponent(selector)}`]
        : []),
    ];
    for (const p of paths) {
      await http.delete(p).catch((err: unknown) => {
        console.log(
          `  (DELETE ${p.split('?')[0]} failed: ${err instanceof Error ? err.message : String(err)}; asking again)`,
        );
      });
    }
  };
  let askedAt = Date.now();
  await deleteAll();
  for (;;) {
    const left = await Promise.all([
      count(http, path),
      count(http, `/api/v1/namespaces/${namespace}/pods`, selector),
      count(http, `/api/v1/namespaces/${namespace}/secrets`, selector),
    ]);
    if (left.every((n) => n === 0)) break;
    if (Date.now() - t0 > 600_000)
      throw new Error(`${namespace} not empty after 10 min: ${left.join('/')} left`);
    if (Date.now() - askedAt > DELETE_AGAIN_MS) {
      askedAt = Date.now();
      await deleteAll();
    }
    await new Promise((r) => setTimeout(r, 2000));
  }
  console.log(`  (${namespace} emptied in ${((Date.now() - t0) / 1000).toFixed(1)} s)`);
}

/**
 * Waits until `expected` sessions the tracker saw Ready are gone, then reports each one's lag
 * past its idle deadline (the operator's readyTime + idleSeconds) and when the last one went.
 */
export async function idleGc(tracker: ReadyTracker, idleSeconds: number, expected: number): Promise<string> {
  const limitMs = 2 * idleSeconds * 1000;
  await tracker
    .until(
      () => tracker.counts().gone >= expected,
      limitMs + 300_000,
      () => `${expected} sessions collected (${tracker.counts().gone} so far)`,
    )
    .catch((err: unknown) => console.log(`  idle GC: ${err instanceof Error ? err.message : String(err)}`));
  const lags: number[] = [];
  let lastReady = 0;
  let lastGone = 0;
  for (const s of tracker.seen.values()) {
    if (s.readyTime === undefined || s.readyAt === undefined) continue;
    lastReady = Math.max(lastReady, s.readyAt);
    if (s.goneAt === undefined) continue;
    lastGone = Math.max(lastGone, s.goneAt);
    lags.push(s.goneAt - (s.readyTime + idleSeconds * 1000));
  }
  lags.sort((a, b) => a - b);
  const tail = (lastGone - lastReady) / 1000;
  return (
    `idle GC of ${lags.length} (idle timeout ${idleSeconds} s): lag past each deadline p50 ${fixed(pct(lags, 50) / 1000, 1)} s, ` +
    `p99 ${fixed(pct(lags, 99) / 1000, 1)} s, max ${fixed(lags[lags.length - 1]! / 1000, 1)} s; the last one gone ` +
    `${tail.toFixed(0)} s after the last Ready (goal <= 2x the timeout: ${2 * idleSeconds} s); ${load()}`
  );
}
