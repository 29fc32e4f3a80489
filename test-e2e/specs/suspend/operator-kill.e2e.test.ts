/**
 * e2e chaos (issue 13): the operator SIGKILLed while it carries out a suspend, and again while it
 * carries out the resume, of a session with a persistent workspace. The kill is `kill -9` of the
 * operator's node process on this machine (src/framework/pod-processes.ts): no graceful shutdown,
 * no Lease release; the kubelet restarts the container.
 *
 * - suspend: spec.suspend=true through the gateway, the leader killed as soon as the operator is
 *   seen acting (the Pod being deleted) or after 5 s. It converges: phase Suspended, Ready=False
 *   reason Suspended, no Pod, exactly one workspace claim (Bound, the same one) and one Secret
 *   (the same one), each owned by the session; still so once the operator has restarted.
 * - resume: spec.suspend=false, every operator replica killed as soon as the new Pod exists. It
 *   converges: Ready, exactly one Pod, one claim, one Secret; the file written before the suspend
 *   is there and the token the Pod reads is the one from before, through an exec via the gateway.
 * - delete: no Pod, Secret or claim of the session is left.
 *
 * Whether the kill lands before or after a given write of the operator is a race; what was done
 * at the kill is printed, with the time from the kill to convergence. No timing is asserted: each
 * wait is bounded (180 s). Only on the local cluster (it kills a process of this machine);
 * skipped against E2E_KUBECONFIG. Needs `make platform-up` (platform.env).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type * as k8s from '@kubernetes/client-node';
import {
  CONDITIONS,
  LABELS,
  PHASES,
  REASONS,
  secretName,
  workspaceClaimName,
  type SandboxSession,
} from '@sandbox-platform/api';

import { isNotFound } from '../../src/framework/index.js';
import {
  killOperator,
  waitOperatorRestarted,
  waitOperatorSteady,
  type OperatorKill,
} from '../../src/framework/platform-operator.js';
import { predicate, waitFor } from '../../src/framework/wait-for.js';
import { uniqueName } from '../isolation/support.js';
import { NS, READY_MS, exec, kube, readyReason, sbx, session } from './support.js';

/** The local cluster only: the spec kills processes of this machine. */
const onLocalCluster = !process.env.E2E_KUBECONFIG;

const seconds = (ms: number): string => (ms / 1000).toFixed(1);

/** The session and every child carrying its label (Pods being deleted included). */
interface Snapshot {
  session: SandboxSession | undefined;
  pods: k8s.V1Pod[];
  secrets: k8s.V1Secret[];
  claims: k8s.V1PersistentVolumeClaim[];
}

async function snapshot(name: string): Promise<Snapshot> {
  const labelSelector = `${LABELS.session}=${name}`;
  const [s, pods, secrets, claims] = await Promise.all([
    session(name),
    kube.core.listNamespacedPod({ namespace: NS, labelSelector }),
    kube.core.listNamespacedSecret({ namespace: NS, labelSelector }),
    kube.core.listNamespacedPersistentVolumeClaim({ namespace: NS, labelSelector }),
  ]);
  return { session: s, pods: pods.items, secrets: secrets.items, claims: claims.items };
}

/** For the timeout messages: the state in one line. */
function show(value: unknown): string {
  const v = value as Snapshot;
  const ready = v.session?.status?.conditions?.find((c) => c.type === CONDITIONS.ready);
  return JSON.stringify({
    phase: v.session?.status?.phase,
    ready: ready && `${ready.status} ${ready.reason}`,
    suspend: v.session?.spec.suspend,
    pods: v.pods.map((p) => `${p.metadata?.name}${p.metadata?.deletionTimestamp ? ' (deleting)' : ''}`),
    secrets: v.secrets.map((s) => s.metadata?.name),
    claims: v.claims.map((c) => `${c.metadata?.name} ${c.status?.phase}`),
  });
}

/** True when every object is controlled by the session (its UID): none is an orphan or foreign. */
const ownedBy = (s: SandboxSession | undefined, objs: Array<{ metadata?: k8s.V1ObjectMeta }>): boolean =>
  objs.every((o) => o.metadata?.ownerReferences?.find((r) => r.controller)?.uid === s?.metadata.uid);

/** One workspace claim (Bound) and one Secret, both the session's. */
const keptChildren = (v: Snapshot): boolean =>
  v.claims.length === 1 &&
  v.claims[0]!.status?.phase === 'Bound' &&
  v.secrets.length === 1 &&
  ownedBy(v.session, [...v.claims, ...v.secrets]);

/**
 * Polls `acting` (the first sign that the operator carries out the change) every 20 ms for up to
 * 5 s, then SIGKILLs the operator whether or not it was seen (the change is still pending then).
 */
async function killWhen(
  acting: () => Promise<boolean>,
  which: 'leader' | 'all',
): Promise<{ kill: OperatorKill; seen: boolean; afterMs: number }> {
  const t0 = Date.now();
  let seen = false;
  while (!seen && Date.now() - t0 < 5_000) {
    seen = await acting();
    if (!seen) await new Promise((r) => setTimeout(r, 20));
  }
  const kill = await killOperator(kube, which);
  return { kill, seen, afterMs: kill.at - t0 };
}

function describeKill(what: string, k: { kill: OperatorKill; seen: boolean; afterMs: number }): string {
  const pids = k.kill.killed.map((p) => `${p.pod} pid ${p.pid}`).join(', ');
  return (
    `${what}: SIGKILL of ${pids} (Lease holder ${k.kill.leader}) ${k.afterMs} ms after the request` +
    (k.seen ? ', the operator was seen acting' : ', no sign of the operator acting yet')
  );
}

(onLocalCluster ? describe : describe.skip)('operator SIGKILLed during suspend and resume', () => {
  const name = uniqueName('ws-kill');
  /** sha256 of the token the first Pod read, the Secret's and the claim's UIDs. */
  const before = { tokenSum: '', secretUid: '', claimUid: '' };

  beforeAll(async () => {
    // A steady operator to start from: an earlier chaos spec may have left it restarting.
    await waitOperatorSteady(kube);
    await sbx.createSession({ name, persistentWorkspace: true, idleTimeoutSeconds: 900 });
  }, READY_MS);

  afterAll(async () => {
    await sbx.deleteSession(name).catch(() => undefined);
  });

  it(
    'suspend interrupted: converges to Suspended, no Pod, the same Bound claim and Secret, one each',
    async () => {
      const r = await exec(name, 'echo kept-through-kill > kill.txt && sha256sum < /var/run/sandbox/token');
      expect(r.exitCode).toBe(0);
      before.tokenSum = r.stdout.trim();
      const start = await snapshot(name);
      expect([start.pods.length, start.secrets.length, start.claims.length]).toEqual([1, 1, 1]);
      before.secretUid = start.secrets[0]!.metadata!.uid!;
      before.claimUid = start.claims[0]!.metadata!.uid!;

      await sbx.suspendSession(name);
      const k = await killWhen(async () => {
        const pods = (await snapshot(name)).pods;
        return pods.length === 0 || pods.some((p) => p.metadata?.deletionTimestamp);
      }, 'leader');
      console.log(`${describeKill('suspend', k)}; at the kill: ${show(await snapshot(name))}`);

      const converged = (v: Snapshot): boolean =>
        v.session?.status?.phase === PHASES.suspended &&
        readyReason(v.session) === REASONS.suspended &&
        v.pods.length === 0 &&
        keptChildren(v);
      await waitFor(
        () => snapshot(name),
        predicate('Suspended, no Pod, one Bound claim, one Secret', converged),
        {
          timeoutMs: READY_MS,
          intervalMs: 250,
          show,
        },
      );
      const convergedMs = Date.now() - k.kill.at;
      const restartedMs = await waitOperatorRestarted(kube, k.kill);
      console.log(
        `suspend: converged ${seconds(convergedMs)} s after the kill; operator restarted and Ready ${seconds(restartedMs)} s after it`,
      );

      // Still so with the restarted operator, and the children are the ones from before.
      const after = await snapshot(name);
      expect([show(after), converged(after)]).toEqual([show(after), true]);
      const ready = after.session?.status?.conditions?.find((c) => c.type === CONDITIONS.ready);
      expect([ready?.status, ready?.reason]).toEqual(['False', REASONS.suspended]);
      expect(after.secrets.map((s) => s.metadata?.uid)).toEqual([before.secretUid]);
      expect(after.claims.map((c) => c.metadata?.uid)).toEqual([before.claimUid]);
    },
    2 * READY_MS,
  );

  it(
    'resume interrupted: converges to Ready with exactly one Pod; the file and the token are the ones from before',
    async () => {
      await sbx.resumeSession(name);
      const k = await killWhen(async () => (await snapshot(name)).pods.length > 0, 'all');
      console.log(`${describeKill('resume', k)}; at the kill: ${show(await snapshot(name))}`);

      const converged = (v: Snapshot): boolean =>
        v.session?.status?.conditions?.find((c) => c.type === CONDITIONS.ready)?.status === 'True' &&
        v.pods.length === 1 &&
        !v.pods[0]!.metadata?.deletionTimestamp &&
        v.session?.status?.podName === v.pods[0]!.metadata?.name &&
        ownedBy(v.session, v.pods) &&
        keptChildren(v);
      const ready = await waitFor(
        () => snapshot(name),
        predicate('Ready, exactly one Pod, one Bound claim, one Secret', converged),
        { timeoutMs: READY_MS, intervalMs: 250, show },
      );
      const convergedMs = Date.now() - k.kill.at;
      const restartedMs = await waitOperatorRestarted(kube, k.kill);

      // Through the gateway: the agent accepts the session's token, the workspace is the old one.
      const r = await exec(name, 'cat kill.txt && sha256sum < /var/run/sandbox/token');
      expect([r.exitCode, r.stdout.trim().split('\n')]).toEqual([0, ['kept-through-kill', before.tokenSum]]);
      const after = await snapshot(name);
      expect([show(after), converged(after)]).toEqual([show(after), true]);
      expect(after.pods.map((p) => p.metadata?.uid)).toEqual([ready.pods[0]!.metadata?.uid]);
      expect(after.secrets.map((s) => s.metadata?.uid)).toEqual([before.secretUid]);
      expect(after.claims.map((c) => c.metadata?.uid)).toEqual([before.claimUid]);
      console.log(
        `resume: converged ${seconds(convergedMs)} s after the kill; operator restarted and Ready ${seconds(restartedMs)} s after it`,
      );
    },
    2 * READY_MS,
  );

  it('deleted: no Pod, Secret or workspace claim of the session is left', async () => {
    const t0 = Date.now();
    await sbx.deleteSession(name);
    const byName = async (): Promise<string[]> => {
      const left: string[] = [];
      for (const [kind, read] of [
        ['Secret', () => kube.core.readNamespacedSecret({ namespace: NS, name: secretName(name) })],
        [
          'PersistentVolumeClaim',
          () =>
            kube.core.readNamespacedPersistentVolumeClaim({ namespace: NS, name: workspaceClaimName(name) }),
        ],
      ] as const) {
        try {
          await read();
          left.push(kind);
        } catch (err) {
          if (!isNotFound(err)) throw err;
        }
      }
      return left;
    };
    await waitFor(
      async () => ({ ...(await snapshot(name)), byName: await byName() }),
      predicate(
        'the session, its Pods, Secrets and claims gone',
        (v) =>
          v.session === undefined &&
          v.pods.length + v.secrets.length + v.claims.length === 0 &&
          v.byName.length === 0,
      ),
      { timeoutMs: READY_MS, intervalMs: 500, show },
    );
    console.log(`delete: nothing left ${seconds(Date.now() - t0)} s after the delete`);
  });
});
