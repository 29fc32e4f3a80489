/**
 * Verified resume (resume-phase.ts): the digest a suspended persistent session's agent takes before
 * its Pod goes, and the comparison once the resumed Pod is Ready. Only with snapshots turned on:
 * without an object store the operator cannot reach the agent port (chart NetworkPolicy), so the
 * Pod goes at once and nothing is compared.
 */
import { describe, expect, it } from '@jest/globals';
import { workspaceClaimName, type SandboxSession } from '@sandbox-platform/api';
import type { ArchiveSummary } from '@sandbox-platform/api';

import type { ControllerDeps, Scope } from '../../../src/controller/scope.js';
import type { PodView } from '../../../src/state/views.js';
import { statusInputsOf } from '../../../src/controller/scope.js';
import { computeStatus } from '../../../src/controller/status.js';
import { suspendPod } from '../../../src/controller/suspend-phase.js';
import { digestBeforeSuspend, verifyResumedWorkspace } from '../../../src/snapshot/resume-phase.js';
import { RestoreRunner } from '../../../src/snapshot/restore-runner.js';
import { podView, ready } from '../../fixtures/pods.js';
import { session, withSpec } from '../../fixtures/sessions.js';
import { MemoryStore } from './fakes.js';

const NOW = new Date('2030-01-01T00:01:00Z');
const persistent = session(
  withSpec({ workspace: { sizeLimit: '1Gi', persistentVolumeClaim: { storageClassName: 'local-path' } } }),
);
const summary = (digest: string): ArchiveSummary => ({
  digest,
  files: 1,
  directories: 0,
  symlinks: 0,
  skipped: 0,
  contentBytes: 1,
  archiveBytes: 1,
});

function world(opts: { configured: boolean; digests: string[] }) {
  const calls: Array<{ podIP: string; quiesce: boolean }> = [];
  const events: string[] = [];
  const runner = new RestoreRunner({
    ...(opts.configured ? { store: new MemoryStore() } : {}),
    agent: {
      archive: () => Promise.reject(new Error('unused')),
      restore: () => Promise.reject(new Error('unused')),
      digest: (target, quiesce = false) => {
        calls.push({ podIP: target.podIP, quiesce });
        const next = opts.digests.shift();
        return next === undefined ? Promise.reject(new Error('agent gone')) : Promise.resolve(summary(next));
      },
    },
    snapshot: () => undefined,
    wake: () => undefined,
    masterKey: Buffer.alloc(32, 2),
    concurrency: 1,
  });
  // The session's claim in the operator's cache (owned: controller reference to session demo).
  const claim = {
    metadata: {
      name: workspaceClaimName('demo'),
      namespace: 'team-a',
      uid: 'claim-uid',
      resourceVersion: '1',
      controller: { apiVersion: 'sandbox.dev/v1alpha1', kind: 'SandboxSession', name: 'demo', uid: 'uid-1' },
    },
    phase: 'Bound',
  };
  const deps = {
    restores: runner,
    claims: {
      cached: (ns: string, name: string) =>
        ns === 'team-a' && name === claim.metadata.name ? claim : undefined,
    },
    events: { record: (_o: unknown, e: { reason: string }) => events.push(e.reason) },
    logger: { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined },
  } as unknown as ControllerDeps;
  // A suspended session's phases run suspendPod before ensureWorkspace: no claim in the scope yet.
  const scope = (s: SandboxSession, pod: PodView, inScope = true) =>
    ({
      key: { namespace: 'team-a', name: 'demo' },
      ref: { namespace: 'team-a', name: 'demo' },
      session: s,
      pod,
      ...(inScope ? { claim: { metadata: { uid: 'claim-uid' } } } : {}),
      now: NOW,
    }) as unknown as Scope;
  return { runner, deps, scope, calls, events };
}

const settle = () => new Promise((r) => setTimeout(r, 5));
const withDigest = (digest: string, podUID = 'pod-uid-1'): SandboxSession => ({
  ...persistent,
  status: { ...persistent.status, workspaceDigest: { digest, claimUID: 'claim-uid', podUID } },
});
const resumedPod = podView(ready, (p) => {
  (p.metadata as { uid: string }).uid = 'pod-uid-2';
});

describe('digest before a suspension', () => {
  it('without an object store: the Pod may go at once, the agent is never asked', () => {
    const w = world({ configured: false, digests: ['sha256:a'] });
    expect(digestBeforeSuspend(w.scope(persistent, podView(ready)), w.deps, podView(ready))).toBeUndefined();
    expect(w.calls).toEqual([]);
  });

  it('an emptyDir workspace is not hashed', () => {
    const w = world({ configured: true, digests: ['sha256:a'] });
    expect(digestBeforeSuspend(w.scope(session(), podView(ready)), w.deps, podView(ready))).toBeUndefined();
    expect(w.calls).toEqual([]);
  });

  it('Ready says Suspending (not Suspended) while the Pod is held for its digest', async () => {
    const w = world({ configured: true, digests: ['sha256:a'] });
    const suspended = { ...persistent, spec: { ...persistent.spec, suspend: true } };
    const deleted: string[] = [];
    const deps = {
      ...w.deps,
      pods: {
        cached: () => undefined,
        delete: (_ns: string, name: string) => Promise.resolve(void deleted.push(name)),
      },
    } as unknown as ControllerDeps;
    const scope = w.scope(suspended, podView(ready), false);
    expect(await suspendPod(scope, deps)).toEqual({ halt: true, requeueAfterMs: 1000 });
    expect(deleted).toEqual([]);
    const ready_ = computeStatus(statusInputsOf(scope, { kind: 'active' })).conditions?.[0];
    expect(ready_).toMatchObject({ status: 'False', reason: 'Suspending' });
    expect(ready_?.message).toMatch(
      /^Suspending \(spec.suspend is true\): recording the workspace digest \(verified resume\) before Pod sbs-demo is deleted/,
    );
  });

  it('asks the agent to quiesce and hash, holds the Pod meanwhile, then records the digest with claim and Pod UIDs', async () => {
    const w = world({ configured: true, digests: ['sha256:a'] });
    const first = w.scope(persistent, podView(ready), false);
    expect(digestBeforeSuspend(first, w.deps, podView(ready))).toEqual({ halt: true, requeueAfterMs: 1000 });
    expect(w.calls).toEqual([{ podIP: '198.18.0.5', quiesce: true }]);
    await settle();
    // As the suspend path runs it: the claim is not in the scope, its UID comes from the cache.
    const second = w.scope(persistent, podView(ready), false);
    expect(digestBeforeSuspend(second, w.deps, podView(ready))).toEqual({ halt: true, requeueAfterMs: 0 });
    expect(second.workspaceVerdict?.digest).toMatchObject({
      digest: 'sha256:a',
      claimUID: 'claim-uid',
      podUID: 'pod-uid-1',
    });
    // The reconcile after the one that wrote the record deletes the Pod.
    expect(digestBeforeSuspend(w.scope(withDigest('sha256:a'), podView(ready)), w.deps, podView(ready))).toBe(
      undefined,
    );
  });

  it('records an empty digest when the agent fails (the resume then says ResumeUnverified)', async () => {
    const w = world({ configured: true, digests: [] });
    digestBeforeSuspend(w.scope(persistent, podView(ready)), w.deps, podView(ready));
    await settle();
    const again = w.scope(persistent, podView(ready));
    digestBeforeSuspend(again, w.deps, podView(ready));
    expect(again.workspaceVerdict?.digest?.digest).toBe('');
  });
});

describe('comparison after a resume', () => {
  it('without an object store: nothing is compared', async () => {
    const w = world({ configured: false, digests: ['sha256:a'] });
    const scope = w.scope(withDigest('sha256:a'), resumedPod);
    await verifyResumedWorkspace(scope, w.deps);
    expect(scope.workspaceVerdict).toBeUndefined();
    expect(w.calls).toEqual([]);
  });

  it('holds Ready (WorkspaceVerifying) until the new Pod is hashed, then ResumeVerified on the same digest', async () => {
    const w = world({ configured: true, digests: ['sha256:a'] });
    const first = w.scope(withDigest('sha256:a'), resumedPod);
    await verifyResumedWorkspace(first, w.deps);
    expect(first.workspaceVerdict).toMatchObject({
      allowsReady: false,
      condition: { status: 'Unknown', reason: 'WorkspaceVerifying' },
    });
    expect(w.calls).toEqual([{ podIP: '198.18.0.5', quiesce: false }]);
    await settle();
    const second = w.scope(withDigest('sha256:a'), resumedPod);
    await verifyResumedWorkspace(second, w.deps);
    expect(second.workspaceVerdict).toMatchObject({
      allowsReady: true,
      condition: { status: 'True', reason: 'ResumeVerified' },
      digest: { checkedPodUID: 'pod-uid-2' },
    });
  });

  it('a different digest: ResumeDigestMismatch with a Warning Event (WorkspaceChanged), Ready not held', async () => {
    const w = world({ configured: true, digests: ['sha256:b'] });
    await verifyResumedWorkspace(w.scope(withDigest('sha256:a'), resumedPod), w.deps);
    await settle();
    const second = w.scope(withDigest('sha256:a'), resumedPod);
    await verifyResumedWorkspace(second, w.deps);
    expect(second.workspaceVerdict).toMatchObject({
      allowsReady: true,
      condition: { status: 'False', reason: 'ResumeDigestMismatch' },
    });
    expect(w.events).toEqual(['WorkspaceChanged']);
  });

  it('no digest recorded at suspension: ResumeUnverified without asking the agent', async () => {
    const w = world({ configured: true, digests: ['sha256:a'] });
    const scope = w.scope(withDigest(''), resumedPod);
    await verifyResumedWorkspace(scope, w.deps);
    expect(scope.workspaceVerdict?.condition).toMatchObject({
      status: 'Unknown',
      reason: 'ResumeUnverified',
    });
    expect(w.calls).toEqual([]);
  });
});
