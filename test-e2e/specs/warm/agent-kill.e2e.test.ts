/**
 * e2e chaos (issue 27, docs/adr/0016): the agent of a warm Pod killed between its claim and its
 * bind, the bind carrying a Secret value.
 *
 * A pool of 2 on the runc RuntimeClass (so that the agents are processes of this machine: under
 * gVisor they run inside the sandbox's kernel), every warm agent frozen (SIGSTOP: a bind then sits
 * unread in its socket), a pooled session created through the gateway with a plain value and a
 * Secret reference; the moment a watch sees a warm Pod claimed (its controller turned to the
 * session: the claim patch and the bind go out together), every frozen agent is SIGKILLed. Then:
 *
 * - the session gets another Pod (a Pod of the pool's template) and its shell prints both values;
 * - the claimed Pod whose agent died is deleted (never returned to the pool);
 * - no value is left in any Pod but the session's own: no Pod spec holds one, and no file of any
 *   other Pod's emptyDirs on this node (the kubelet's pod directories: where a bind is kept) does.
 *
 * Only on the local cluster (it signals processes of this machine and reads the kubelet's
 * directories); NOT RUN without a runc RuntimeClass.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

import { afterAll, expect } from '@jest/globals';
import type * as k8s from '@kubernetes/client-node';
import { CONDITIONS, KIND, POOL_LABELS } from '@sandbox-platform/api';

import {
  findPodProcesses,
  predicate,
  REPO_ROOT,
  signalProcesses,
  waitFor,
} from '@sandbox-platform/test-support';
import { itIf, onLocalCluster } from '../../src/framework/not-run.js';
import { watchPods } from '../../src/framework/resource-watch.js';
import { runcRuntimeClass } from '../isolation/support.js';
import { createPool, deletePool, readPool } from '../support/custom-objects.js';
import { deleteSecret, kube, NS, poolPods, putSecret, READY_MS, sbx, session, warmOf } from './support.js';

const suffix = randomBytes(3).toString('hex');
const POOL = `warm-kill-${suffix}`;
const SECRET = `warm-kill-${suffix}`;
const NAME = `warm-kill-${suffix}`;
const A = `alpha-${randomBytes(6).toString('hex')}`;
const C = `secret-${randomBytes(8).toString('hex')}`;
const RUNC = onLocalCluster ? await runcRuntimeClass(kube.kc) : undefined;
/** The kubelet's pod directories on this machine (localkube). */
const KUBELET_PODS = join(process.env.LOCALKUBE_DIR ?? join(REPO_ROOT, '.localkube'), 'kubelet', 'pods');

const reason = !onLocalCluster
  ? 'signals processes of this machine and reads its kubelet directories: local cluster only'
  : !RUNC
    ? 'no runc RuntimeClass: under gVisor the agents are not processes of this machine'
    : !existsSync(KUBELET_PODS)
      ? `no kubelet pod directories at ${KUBELET_PODS}`
      : undefined;

const controllerOf = (p: k8s.V1Pod): k8s.V1OwnerReference | undefined =>
  p.metadata?.ownerReferences?.find((o) => o.controller);

/** Files under a directory (bounded depth), skipping what cannot be read. */
function filesUnder(dir: string, depth = 4): string[] {
  if (depth < 0 || !existsSync(dir)) return [];
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    try {
      const st = statSync(path);
      if (st.isDirectory()) return filesUnder(path, depth - 1);
      return st.isFile() && st.size < 8 * 1024 * 1024 ? [path] : [];
    } catch {
      return [];
    }
  });
}

/** emptyDir files of every Pod directory on this node but `except`'s that contain `value`. */
function emptyDirFilesHolding(value: string, except: string): string[] {
  return readdirSync(KUBELET_PODS)
    .filter((uid) => uid !== except)
    .flatMap((uid) => filesUnder(join(KUBELET_PODS, uid, 'volumes', 'kubernetes.io~empty-dir')))
    .filter((file) => {
      try {
        return readFileSync(file).includes(value);
      } catch {
        return false;
      }
    });
}

afterAll(async () => {
  await sbx.deleteSession(NAME).catch(() => undefined);
  await deletePool(kube, NS, POOL).catch(() => undefined);
  await deleteSecret(SECRET);
});

itIf(reason)(
  'the agent killed between claim and bind: no value left in any Pod, the session gets another Pod',
  async () => {
    await putSecret(SECRET, 'token', C);
    await createPool(kube, NS, POOL, { replicas: 2, template: { runtimeClassName: RUNC } });
    await waitFor(
      () => readPool(kube, NS, POOL),
      predicate(`pool ${POOL}: 2 available`, (p) => (p?.status?.available ?? 0) >= 2),
      { timeoutMs: READY_MS, intervalMs: 500 },
    );
    const warm = warmOf(await poolPods(POOL));
    const agents = findPodProcesses(warm, { command: 'node' }).filter((p) => !p.argv.includes('probe'));
    let claimed: string | undefined;
    const watch = await watchPods(kube.kc, NS, `${POOL_LABELS.pool}=${POOL}`, (_type, pod) => {
      if (claimed || controllerOf(pod)?.kind !== KIND) return;
      claimed = pod.metadata?.name;
      signalProcesses(agents, 'SIGKILL');
    });
    signalProcesses(agents, 'SIGSTOP');
    try {
      await sbx.createSession({
        name: NAME,
        pool: POOL,
        idleTimeoutSeconds: 900,
        env: { A },
        secretEnv: { C: { secret: SECRET, key: 'token' } },
      } as Parameters<typeof sbx.createSession>[0]);
      await waitFor(
        () => Promise.resolve(claimed),
        predicate('a warm Pod claimed (its agents then killed)', (c) => c !== undefined),
        { timeoutMs: READY_MS, intervalMs: 100 },
      );
    } finally {
      watch.stop();
    }
    const s = (await waitFor(
      () => session(NAME),
      predicate(
        `${NAME} Ready`,
        (x) =>
          x?.status?.conditions?.some((c) => c.type === CONDITIONS.ready && c.status === 'True') ?? false,
      ),
      { timeoutMs: READY_MS, intervalMs: 500 },
    ))!;
    const out = await sbx.exec(NAME, { command: 'echo $A $C', waitSeconds: 120 });
    expect(out.stdout).toBe(`${A} ${C}\n`);
    expect(s.status?.podName).not.toBe(claimed);
    console.log(`claimed ${claimed} (agents killed); the session runs on ${s.status?.podName}`);

    // The claimed Pod is deleted, never returned to the pool.
    await waitFor(
      () => poolPods(POOL),
      predicate(`${claimed} deleted`, (pods) => !pods.some((p) => p.metadata?.name === claimed)),
      { timeoutMs: READY_MS, intervalMs: 500 },
    );
    // No value in any Pod but the session's: specs, and the emptyDirs of this node.
    const own = await kube.core.readNamespacedPod({ namespace: NS, name: s.status!.podName! });
    const others = (await kube.core.listNamespacedPod({ namespace: NS })).items.filter(
      (p) => p.metadata?.uid !== own.metadata?.uid,
    );
    for (const value of [A, C]) {
      expect(others.filter((p) => JSON.stringify(p).includes(value)).map((p) => p.metadata?.name)).toEqual(
        [],
      );
      expect(emptyDirFilesHolding(value, own.metadata!.uid!)).toEqual([]);
    }
  },
  READY_MS * 3,
);
