/**
 * The restore phase and its effect on status: a session with spec.workspace.fromSnapshot is Ready
 * only once its current Pod (or claim) holds the verified snapshot; the WorkspaceVerified
 * condition and status.workspaceRestore say so; failures get stable reasons, final or retried.
 */
import { describe, expect, it } from '@jest/globals';
import type { SandboxSession, SandboxSessionStatus } from '@sandbox-platform/api';

import type { ControllerDeps, Scope } from '../../../src/controller/scope.js';
import { computeStatus } from '../../../src/controller/status.js';
import { AgentArchiveError, type AgentArchiveClient } from '../../../src/snapshot/agent-archive.js';
import { SnapshotCorruptedError } from '../../../src/snapshot/copy-in.js';
import { classify, ensureRestored } from '../../../src/snapshot/restore-phase.js';
import { RestoreRunner } from '../../../src/snapshot/restore-runner.js';
import { StoreError } from '../../../src/snapshot/s3-client.js';
import type { SnapshotView } from '../../../src/snapshot/snapshot-kube.js';
import type { WorkspaceVerdict } from '../../../src/snapshot/workspace-verdict.js';
import { podView, ready } from '../../fixtures/pods.js';
import { session, withSpec } from '../../fixtures/sessions.js';
import { MemoryStore } from './fakes.js';

const NOW = new Date('2030-01-01T00:01:00Z');
const forked = session(withSpec({ workspace: { sizeLimit: '1Gi', fromSnapshot: { name: 's1' } } }));

function status(s: SandboxSession, verdict?: WorkspaceVerdict): SandboxSessionStatus {
  return computeStatus({
    session: s,
    now: NOW,
    secretReady: true,
    outcome: { kind: 'active' },
    pod: podView(ready),
    workspaceVerdict: verdict,
  });
}
const cond = (s: SandboxSessionStatus, type: string) => s.conditions?.find((c) => c.type === type);

describe('status of a session restored from a snapshot', () => {
  it('is not Ready on a Ready Pod until a verdict allows it (a reconcile that never reached the phase included)', () => {
    const s = status(forked);
    expect(cond(s, 'Ready')).toMatchObject({ status: 'False', reason: 'WorkspaceRestoring' });
    expect(s.phase).toBe('Pending');
  });

  it('is Ready with WorkspaceVerified True and the restore recorded once verified', () => {
    const restore = {
      snapshotName: 's1',
      snapshotUID: 'u',
      digest: 'sha256:x',
      targetUID: 'pod-uid-1',
      completedAt: NOW.toISOString(),
    };
    const s = status(forked, {
      condition: { status: 'True', reason: 'SnapshotVerified', message: 'ok' },
      allowsReady: true,
      restore,
    });
    expect(cond(s, 'Ready')).toMatchObject({ status: 'True', reason: 'SandboxReady' });
    expect(cond(s, 'WorkspaceVerified')).toMatchObject({ status: 'True', reason: 'SnapshotVerified' });
    expect(s.workspaceRestore).toEqual(restore);
  });

  it('reports a failed verification as the Ready reason', () => {
    const s = status(forked, {
      condition: { status: 'False', reason: 'DigestMismatch', message: 'other data' },
      allowsReady: false,
    });
    expect(cond(s, 'Ready')).toMatchObject({
      status: 'False',
      reason: 'DigestMismatch',
      message: 'other data',
    });
    expect(cond(s, 'WorkspaceVerified')).toMatchObject({ status: 'False', reason: 'DigestMismatch' });
  });

  it('leaves sessions without a snapshot alone', () => {
    const s = status(session());
    expect(cond(s, 'Ready')?.status).toBe('True');
    expect(cond(s, 'WorkspaceVerified')).toBeUndefined();
  });
});

function snapView(phase: 'Ready' | 'InProgress' | 'Failed', sizeBytes = 1000): SnapshotView {
  return {
    metadata: {
      name: 's1',
      namespace: 'team-a',
      uid: 'snap-uid',
      resourceVersion: '3',
      generation: 1,
      finalizers: [],
    },
    spec: { sessionRef: { name: 'src' } },
    status: {
      phase,
      sizeBytes,
      digest: `sha256:${'1'.repeat(64)}`,
      manifestDigest: `sha256:${'2'.repeat(64)}`,
    },
  };
}

function phaseWorld(snap: SnapshotView | undefined, agent?: Partial<AgentArchiveClient>) {
  const woken: string[] = [];
  const runner = new RestoreRunner({
    store: new MemoryStore(),
    agent: {
      archive: () => Promise.reject(new Error('unused')),
      digest: () => Promise.reject(new Error('unused')),
      restore: () => Promise.reject(new Error('unused')),
      ...agent,
    },
    snapshot: () => snap,
    wake: (k) => woken.push(k),
    masterKey: Buffer.alloc(32, 2),
    concurrency: 1,
  });
  const deps = {
    restores: runner,
    waitRequeueMs: 5000,
    podOptions: { defaultWorkspaceSize: '1Gi' },
    events: { record: () => undefined },
    logger: { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined },
  } as unknown as ControllerDeps;
  const scope = (pod = podView(ready)) =>
    ({
      key: { namespace: 'team-a', name: 'demo' },
      ref: { namespace: 'team-a', name: 'demo' },
      session: forked,
      pod,
    }) as unknown as Scope;
  return { runner, deps, scope, woken };
}

describe('ensureRestored', () => {
  it('does nothing before the Pod is Ready (the status then says WorkspaceRestoring)', async () => {
    const w = phaseWorld(snapView('Ready'));
    const scope = w.scope(podView());
    await ensureRestored(scope, w.deps);
    expect(scope.workspaceVerdict).toBeUndefined();
  });

  it('waits for a missing or unfinished snapshot and is woken when it changes', async () => {
    for (const [snap, reason] of [
      [undefined, 'SnapshotNotFound'],
      [snapView('InProgress'), 'SnapshotNotReady'],
      [snapView('Failed'), 'SnapshotFailed'],
    ] as const) {
      const w = phaseWorld(snap);
      const scope = w.scope();
      await ensureRestored(scope, w.deps);
      expect(scope.workspaceVerdict?.condition?.reason).toBe(reason);
      expect(scope.workspaceVerdict?.allowsReady).toBe(false);
      w.runner.snapshotChanged('team-a', 's1');
      expect(w.woken).toEqual(['team-a/demo']);
    }
  });

  it('refuses a snapshot larger than the workspace', async () => {
    const w = phaseWorld(snapView('Ready', 2 * 1024 ** 3));
    const scope = w.scope();
    await ensureRestored(scope, w.deps);
    expect(scope.workspaceVerdict?.condition?.reason).toBe('WorkspaceTooSmall');
  });

  it('starts a restore, reports it running, then its final failure without retrying', async () => {
    const w = phaseWorld(snapView('Ready'));
    const scope = w.scope();
    await ensureRestored(scope, w.deps);
    expect(scope.workspaceVerdict?.condition?.reason).toBe('WorkspaceRestoring');
    await new Promise((r) => setTimeout(r, 20));
    const again = w.scope();
    await ensureRestored(again, w.deps);
    // The manifest is not in the (empty) bucket: an object is missing, which is corruption.
    expect(again.workspaceVerdict?.condition?.reason).toBe('SnapshotCorrupted');
    const third = w.scope();
    await ensureRestored(third, w.deps);
    expect(third.workspaceVerdict?.condition?.reason).toBe('SnapshotCorrupted');
    expect(w.woken).toEqual(['team-a/demo']);
  });

  it('trusts a recorded restore of the same target and snapshot', async () => {
    const w = phaseWorld(snapView('Ready'));
    const scope = w.scope();
    scope.session = {
      ...forked,
      status: { workspaceRestore: { snapshotName: 's1', targetUID: 'pod-uid-1', digest: 'sha256:d' } },
    };
    await ensureRestored(scope, w.deps);
    expect(scope.workspaceVerdict).toMatchObject({
      allowsReady: true,
      condition: { reason: 'SnapshotVerified' },
    });
  });

  it('classifies failures: corruption and mismatches are final, an unreachable store or agent is retried', () => {
    expect(classify(new SnapshotCorruptedError('x'))).toEqual({ reason: 'SnapshotCorrupted', final: true });
    expect(classify(new AgentArchiveError('digest-mismatch', 'x'))).toEqual({
      reason: 'DigestMismatch',
      final: true,
    });
    expect(classify(new StoreError('not-found', 'x'))).toEqual({ reason: 'SnapshotCorrupted', final: true });
    expect(classify(new StoreError('unavailable', 'x'))).toEqual({
      reason: 'StoreUnavailable',
      final: false,
    });
    expect(classify(new AgentArchiveError('unreachable', 'x'))).toEqual({
      reason: 'RestoreFailed',
      final: false,
    });
  });
});
