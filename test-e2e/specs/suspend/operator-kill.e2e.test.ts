/**
 * e2e chaos (issue 13): the operator SIGKILLed while it carries out a suspend, and again while it
 * carries out the resume, of a session with a persistent workspace. The kill is `kill -9` of the
 * operator's node process on this machine (test-support/src/pod-processes.ts): no graceful shutdown,
 * no Lease release; the kubelet restarts the container.
 *
 * - suspend: spec.suspend=true through the gateway, the leader killed as soon as a watch of the
 *   session sees the change (when the operator's own watch does). It converges: phase Suspended,
 *   Ready=False reason Suspended, no Pod, exactly one workspace claim (Bound, the same one) and
 *   one Secret (the same one), each owned by the session; still so once the operator restarted.
 * - resume: spec.suspend=false, every operator replica killed as soon as a watch sees the new
 *   Pod. It converges: Ready, exactly one Pod, one claim, one Secret; the file written before the
 *   suspend is there and the Pod reads the token from before, through an exec via the gateway.
 * - suspend again, the leader killed as soon as a watch sees the Pod's delete (the operator's own
 *   write; its status write is just before or after it): the same convergence, the terminating
 *   Pod not replaced.
 * - delete (while suspended): no Pod, Secret or claim of the session is left.
 *
 * Operator pods whose container died in the last 10 minutes (earlier kills, this spec's own
 * included) are replaced before each kill (platform-operator.ts, freshOperator): the kubelet's
 * crash back-off would otherwise hold their restart for 10 s, 20 s, ... up to 5 min, which
 * measures the kubelet's policy, not the operator.
 *
 * Whether the kill lands before or after a given write of the operator is a race; what was done
 * at the kill is printed, with the time from the kill to convergence. No timing is asserted: each
 * wait is bounded (180 s). Only on the local cluster (it kills a process of this machine);
 * skipped against E2E_KUBECONFIG. Needs `make platform-up` (platform.env).
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import type * as k8s from '@kubernetes/client-node';
import {
  CONDITIONS,
  GROUP,
  LABELS,
  PHASES,
  PLURAL,
  REASONS,
  secretName,
  VERSION,
  workspaceClaimName,
  type SandboxSession,
} from '@sandbox-platform/api';

import { isNotFound } from '../../src/framework/index.js';
import { waitOperatorRestarted, type OperatorKill } from '../../src/framework/platform-operator.js';
import { watchPods, watchResource, type ResourceWatch } from '../../src/framework/resource-watch.js';
import { predicate, waitFor } from '@sandbox-platform/test-support';
import { uniqueName } from '../isolation/support.js';
import { describeOnLocal } from '../../src/framework/not-run.js';
import { armKillOnce, seconds, startFromFreshOperator } from '../support/operator-kill.js';
import { NS, READY_MS, exec, kube, readyReason, sbx, session } from './support.js';

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

/** What killWhen did. */
interface Kill {
  kill: OperatorKill;
  /** The cue the kill was fired at, or a note that it never came. */
  cue: string;
  /** From sending the request to the kill. */
  afterMs: number;
}

/**
 * Makes a SIGKILL of the operator ready (its processes found), starts the watch `watch` opens,
 * sends the request, and fires the kill at the first event the watch calls back for (`cue`), or 5 s
 * after the request when none came (the change is still pending then).
 */
async function killWhen(
  which: 'leader' | 'all',
  request: () => Promise<unknown>,
  cue: string,
  watch: (fire: () => void) => Promise<ResourceWatch>,
): Promise<Kill> {
  const trigger = await armKillOnce(kube, which);
  const watching = await watch(() => trigger.fire(cue));
  const t0 = Date.now();
  let timer: NodeJS.Timeout | undefined;
  try {
    await request();
    timer = setTimeout(() => trigger.fire(`no ${cue} within 5 s`), 5_000);
    await trigger.fired;
  } finally {
    clearTimeout(timer);
    watching.stop();
  }
  const outcome = trigger.outcome();
  return { ...outcome, afterMs: outcome.kill.at - t0 };
}

function describeKill(what: string, k: Kill): string {
  const pids = k.kill.killed.map((p) => `${p.pod} pid ${p.pid}`).join(', ');
  return `${what}: SIGKILL of ${pids} (Lease holder ${k.kill.leader}) ${k.afterMs} ms after the request, at: ${k.cue}`;
}

describeOnLocal('operator SIGKILLed during suspend and resume', () => {
  const name = uniqueName('ws-kill');
  /** sha256 of the token the first Pod read, the Secret's and the claim's UIDs. */
  const before = { tokenSum: '', secretUid: '', claimUid: '' };

  beforeAll(async () => {
    await startFromFreshOperator(kube);
    await sbx.createSession({ name, persistentWorkspace: true, idleTimeoutSeconds: 900 });
  }, READY_MS);

  afterAll(async () => {
    await sbx.deleteSession(name).catch(() => undefined);
  });

  /**
   * After a kill during a suspend: waits for convergence (Suspended, no Pod, the claim and Secret
   * kept, one each), then for the operator's restart, and checks it still holds.
   */
  async function suspendKilled(k: Kill): Promise<void> {
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
  }

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

      // The kill as soon as a watch of the session sees spec.suspend=true, as the operator's own
      // watch does: its reconcile is then starting, before its delete of the Pod.
      await suspendKilled(
        await killWhen(
          'leader',
          () => sbx.suspendSession(name),
          'spec.suspend=true seen',
          (fire) =>
            watchResource<SandboxSession>(
              kube.kc,
              `/apis/${GROUP}/${VERSION}/namespaces/${NS}/${PLURAL}`,
              { fieldSelector: `metadata.name=${name}` },
              (_type, s) => {
                if (s.spec.suspend === true) fire();
              },
            ),
        ),
      );
    },
    2 * READY_MS,
  );

  it(
    'resume interrupted: converges to Ready with exactly one Pod; the file and the token are the ones from before',
    async () => {
      // The leader died in the test before: without a fresh pod the kubelet holds its restart.
      await startFromFreshOperator(kube);
      // The kill as soon as the new Pod exists: the operator then waits for it to become Ready.
      const k = await killWhen(
        'all',
        () => sbx.resumeSession(name),
        'the new Pod seen',
        (fire) =>
          watchPods(kube.kc, NS, `${LABELS.session}=${name}`, (type) => {
            if (type === 'ADDED') fire();
          }),
      );
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

  it(
    'suspend interrupted after the Pod delete: converges the same way, the terminating Pod not replaced',
    async () => {
      // Every replica died in the test before: without fresh pods the kubelet holds their restart.
      await startFromFreshOperator(kube);
      // The kill as soon as a watch sees the Pod being deleted: the operator has done its delete,
      // its status write is just before or after; the Pod is still terminating.
      await suspendKilled(
        await killWhen(
          'leader',
          () => sbx.suspendSession(name),
          "the Pod's delete seen",
          (fire) =>
            watchPods(kube.kc, NS, `${LABELS.session}=${name}`, (type, pod) => {
              if (type === 'DELETED' || pod.metadata?.deletionTimestamp) fire();
            }),
        ),
      );
    },
    2 * READY_MS,
  );

  it('deleted while suspended: no Pod, Secret or workspace claim of the session is left', async () => {
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
