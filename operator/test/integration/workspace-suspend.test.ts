/**
 * Persistent workspaces and suspension on a real API server: the claim is created, owned and kept
 * across suspend and resume (same UID), the Secret too; shutdownPolicy Suspend suspends an idle
 * session by patching spec.suspend; an unknown StorageClass and a claim that never binds get
 * their reasons; and SIGKILLing the operator in the middle of suspending, then of resuming, many
 * sessions converges with exactly one claim and one Secret per session (and one Pod once resumed,
 * none while suspended), no orphan left after the sessions are deleted.
 */
import { randomBytes } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { LABELS, MANAGER_NAME, workspaceClaimName, type SandboxSessionSpec } from '@sandbox-platform/api';

import { predicate, waitFor } from '@sandbox-platform/test-support';
import { bindClaim, createStorageClass, readClaim } from './harness/claims.js';
import { OperatorFixture } from './harness/fixture.js';
import type { OperatorProcess } from './harness/operator-process.js';
import {
  eventReasons,
  readPod,
  readSecret,
  ready,
  readyIs,
  runningReady,
  setPodStatus,
} from './harness/sessions.js';

const CLASS = `it-none-${randomBytes(3).toString('hex')}`;
const BIND_TIMEOUT_S = 4;
const ENV = {
  WORKSPACE_BIND_TIMEOUT_SECONDS: String(BIND_TIMEOUT_S),
  LEASE_DURATION_SECONDS: '4',
  LEASE_RENEW_DEADLINE_SECONDS: '3',
  LEASE_RETRY_PERIOD_SECONDS: '1',
};

const fx = new OperatorFixture('op-ws');
const { kube, ns, sessions } = fx;
let op: OperatorProcess;
let dropClass: () => Promise<void>;

const persistent = (extra: SandboxSessionSpec = {}): SandboxSessionSpec => ({
  workspace: { persistentVolumeClaim: { storageClassName: CLASS } },
  ...extra,
});

beforeAll(async () => {
  await fx.setup();
  dropClass = await createStorageClass(kube.kc, CLASS);
  op = await fx.startController({ env: ENV });
});

afterAll(async () => {
  await fx.teardown('SIGKILL');
  await dropClass();
});

async function podUid(name: string): Promise<string | undefined> {
  return (await readPod(kube.core, ns.name, `sbs-${name}`))?.metadata?.uid;
}

/** Waits until the session's Events include these reasons (Events are sent in the background). */
async function eventsInclude(name: string, reasons: string[]): Promise<void> {
  await waitFor(
    () => eventReasons(kube.core, ns.name, name),
    predicate(`events ${reasons.join(', ')}`, (got) => reasons.every((r) => got.includes(r))),
    { timeoutMs: 20_000 },
  );
}

/** Waits for the Pod, binds the claim, reports the Pod Running and Ready. */
async function makeReady(name: string): Promise<void> {
  await waitFor(
    () => podUid(name),
    predicate('pod created', (u) => u !== undefined),
    { timeoutMs: 20_000 },
  );
  const claim = await readClaim(kube.core, ns.name, workspaceClaimName(name));
  if (claim?.status?.phase !== 'Bound') await bindClaim(kube.core, ns.name, workspaceClaimName(name));
  await setPodStatus(kube.core, ns.name, `sbs-${name}`, runningReady());
  await sessions.waitFor(name, readyIs('True'));
}

describe('persistent workspace', () => {
  it('creates an owned claim, mounts it, says WorkspacePending until it binds, then Ready', async () => {
    await sessions.create('ws-basic', persistent());
    const pending = await sessions.waitFor('ws-basic', readyIs('False', 'WorkspacePending'));
    expect(pending?.status?.workspaceClaimName).toBe('sbs-ws-basic-workspace');
    const claim = await readClaim(kube.core, ns.name, 'sbs-ws-basic-workspace');
    expect(claim?.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'SandboxSession', controller: true });
    expect(claim?.spec?.storageClassName).toBe(CLASS);
    const pod = await readPod(kube.core, ns.name, 'sbs-ws-basic');
    expect(pod?.spec?.volumes?.find((v) => v.name === 'workspace')?.persistentVolumeClaim).toEqual({
      claimName: 'sbs-ws-basic-workspace',
    });
    await makeReady('ws-basic');
    await eventsInclude('ws-basic', ['CreatedWorkspace', 'CreatedPod', 'Ready']);
  });

  it('an unknown StorageClass is StorageClassNotFound, not a hang', async () => {
    await sessions.create('ws-noclass', {
      workspace: { persistentVolumeClaim: { storageClassName: 'no-such-class' } },
    });
    const s = await sessions.waitFor('ws-noclass', readyIs('False', 'StorageClassNotFound'));
    expect(ready(s)?.message).toContain('StorageClass no-such-class of PersistentVolumeClaim');
    expect(s?.status?.phase).toBe('Failed');
  });

  it('a claim nothing binds is WorkspaceNotBound after the bind timeout', async () => {
    await sessions.create('ws-unbound', persistent());
    await sessions.waitFor('ws-unbound', readyIs('False', 'WorkspacePending'));
    const s = await sessions.waitFor('ws-unbound', readyIs('False', 'WorkspaceNotBound'), 20_000);
    expect(ready(s)?.message).toContain(`has been Pending for more than ${BIND_TIMEOUT_S}s`);
  });
});

describe('suspend and resume', () => {
  it('spec.suspend deletes the Pod and keeps Secret and claim; clearing it creates a Pod on the same claim', async () => {
    await sessions.create('sus', persistent());
    await makeReady('sus');
    const claimUid = (await readClaim(kube.core, ns.name, 'sbs-sus-workspace'))?.metadata?.uid;
    const secretUid = (await readSecret(kube.core, ns.name, 'sbs-sus-token'))?.metadata?.uid;
    const firstPod = await podUid('sus');

    await sessions.setSuspend('sus', true);
    const suspended = await sessions.waitFor('sus', readyIs('False', 'Suspended'));
    expect(suspended?.status?.phase).toBe('Suspended');
    await waitFor(
      () => podUid('sus'),
      predicate('pod gone', (u) => u === undefined),
      { timeoutMs: 20_000 },
    );
    expect((await readSecret(kube.core, ns.name, 'sbs-sus-token'))?.metadata?.uid).toBe(secretUid);
    expect((await readClaim(kube.core, ns.name, 'sbs-sus-workspace'))?.status?.phase).toBe('Bound');

    await sessions.setSuspend('sus', false);
    const second = await waitFor(
      () => podUid('sus'),
      predicate('a new pod', (u) => u !== undefined && u !== firstPod),
      { timeoutMs: 20_000 },
    );
    // The new Pod (a different uid, which the wait saw) mounts the same workspace claim.
    const resumedPod = await readPod(kube.core, ns.name, 'sbs-sus');
    expect(resumedPod?.metadata?.uid).toBe(second);
    expect(resumedPod?.spec?.volumes?.find((v) => v.name === 'workspace')?.persistentVolumeClaim).toEqual({
      claimName: 'sbs-sus-workspace',
    });
    await setPodStatus(kube.core, ns.name, 'sbs-sus', runningReady());
    const back = await sessions.waitFor('sus', readyIs('True'));
    expect(back?.status?.lastResumeTime).toBeDefined();
    expect((await readClaim(kube.core, ns.name, 'sbs-sus-workspace'))?.metadata?.uid).toBe(claimUid);
    expect((await readSecret(kube.core, ns.name, 'sbs-sus-token'))?.metadata?.uid).toBe(secretUid);
    await eventsInclude('sus', ['Suspended', 'Resumed']);
  });

  it('shutdownPolicy Suspend: an idle session is suspended by the operator (spec.suspend set), not deleted', async () => {
    await sessions.create('idle-sus', persistent({ idleTimeoutSeconds: 3, shutdownPolicy: 'Suspend' }));
    await makeReady('idle-sus');
    const s = await sessions.waitFor('idle-sus', readyIs('False', 'Suspended'), 30_000);
    expect(s?.spec.suspend).toBe(true);
    expect(ready(s)?.message).toMatch(/^No activity for 3s; suspended \(shutdownPolicy Suspend\)/);
    await waitFor(
      () => podUid('idle-sus'),
      predicate('pod gone', (u) => u === undefined),
      { timeoutMs: 20_000 },
    );
    expect(await readClaim(kube.core, ns.name, 'sbs-idle-sus-workspace')).toBeDefined();
  });
});

describe('the operator killed during suspend and during resume', () => {
  const COUNT = 24;
  const names = Array.from({ length: COUNT }, (_, i) => `k-${String(i).padStart(2, '0')}`);

  interface Census {
    pods: Map<string, string>;
    secrets: Map<string, string>;
    claims: Map<string, { owner: string; uid: string }>;
  }

  async function census(): Promise<Census> {
    const labelSelector = `${LABELS.managedBy}=${MANAGER_NAME}`;
    const [pods, secrets, claims] = await Promise.all([
      kube.core.listNamespacedPod({ namespace: ns.name, labelSelector }),
      kube.core.listNamespacedSecret({ namespace: ns.name, labelSelector }),
      kube.core.listNamespacedPersistentVolumeClaim({ namespace: ns.name, labelSelector }),
    ]);
    const owner = (o: { metadata?: { ownerReferences?: Array<{ uid: string }> } }): string =>
      o.metadata?.ownerReferences?.[0]?.uid ?? '';
    const mine = <T extends { metadata?: { name?: string; deletionTimestamp?: Date } }>(items: T[]): T[] =>
      items.filter((o) => o.metadata?.name?.startsWith('sbs-k-') && !o.metadata.deletionTimestamp);
    return {
      pods: new Map(mine(pods.items).map((p) => [p.metadata?.name ?? '', owner(p)])),
      secrets: new Map(mine(secrets.items).map((s) => [s.metadata?.name ?? '', owner(s)])),
      claims: new Map(
        mine(claims.items).map((c) => [
          c.metadata?.name ?? '',
          { owner: owner(c), uid: c.metadata?.uid ?? '' },
        ]),
      ),
    };
  }

  it('converges: no Pod while suspended, one after resume, the same claim and Secret throughout, nothing left after deletion', async () => {
    const uids = new Map<string, string>();
    for (let i = 0; i < COUNT; i += 8) {
      const batch = await Promise.all(names.slice(i, i + 8).map((n) => sessions.create(n, persistent())));
      for (const s of batch) uids.set(s.metadata.name!, s.metadata.uid!);
    }
    const provisioned = await waitFor(
      census,
      predicate('all pods', (c) => c.pods.size === COUNT && c.claims.size === COUNT),
      { timeoutMs: 60_000 },
    );
    const claimUids = new Map([...provisioned.claims].map(([n, c]) => [n, c.uid]));

    // Suspend all; SIGKILL the operator once it has deleted some of the Pods, not all.
    await Promise.all(names.map((n) => sessions.setSuspend(n, true)));
    const atKill = await waitFor(
      census,
      predicate('some pods deleted', (c) => c.pods.size < COUNT),
      {
        intervalMs: 20,
      },
    );
    await op.stop('SIGKILL');
    console.log(`suspend: killed with ${atKill.pods.size} of ${COUNT} pods left`);
    op = await fx.startController({ env: ENV }, 30_000);
    const suspended = await waitFor(
      census,
      predicate('no pods', (c) => c.pods.size === 0),
      {
        timeoutMs: 60_000,
      },
    );
    for (const n of names) await sessions.waitFor(n, readyIs('False', 'Suspended'));

    // Resume all; SIGKILL once some Pods exist again.
    await Promise.all(names.map((n) => sessions.setSuspend(n, false)));
    const atKill2 = await waitFor(
      census,
      predicate('some pods created', (c) => c.pods.size > 0),
      {
        intervalMs: 20,
      },
    );
    await op.stop('SIGKILL');
    console.log(`resume: killed with ${atKill2.pods.size} of ${COUNT} pods created`);
    op = await fx.startController({ env: ENV }, 30_000);
    await waitFor(
      census,
      predicate('all pods back', (c) => c.pods.size === COUNT),
      {
        timeoutMs: 60_000,
        show: (c) => `pods: ${[...(c as Census).pods.keys()].join(' ')}; operator:\n${op.tail()}`,
      },
    );
    await new Promise((r) => setTimeout(r, 2_000)); // let a late duplicate surface before counting
    const resumed = await census();

    for (const c of [suspended, resumed]) {
      expect(c.secrets.size).toBe(COUNT);
      expect(c.claims.size).toBe(COUNT);
    }
    expect(resumed.pods.size).toBe(COUNT);
    for (const n of names) {
      const uid = uids.get(n);
      expect([n, resumed.pods.get(`sbs-${n}`)]).toEqual([n, uid]);
      expect([n, resumed.secrets.get(`sbs-${n}-token`)]).toEqual([n, uid]);
      expect([n, resumed.claims.get(workspaceClaimName(n))]).toEqual([
        n,
        { owner: uid, uid: claimUids.get(workspaceClaimName(n)) },
      ]);
    }

    // Deleting the sessions deletes every child, the workspace claims included (ownerReferences).
    await Promise.all(names.map((n) => sessions.delete(n)));
    const empty = await waitFor(
      census,
      predicate('no children', (c) => c.pods.size + c.secrets.size + c.claims.size === 0),
      { timeoutMs: 60_000 },
    );
    expect(empty.claims.size).toBe(0);
  });
});
