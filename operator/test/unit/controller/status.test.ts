import { describe, expect, it } from '@jest/globals';
import type { SandboxSessionStatus } from '@sandbox-platform/api';

import { collectedReason, computeStatus, type StatusInputs } from '../../../src/controller/status.js';
import { statusEqual, statusPatch } from '../../../src/controller/status-patch.js';
import type { PodView } from '../../../src/state/views.js';
import { deleting, phase, podView, ready, scheduled, unschedulable, waiting } from '../../fixtures/pods.js';
import { activeAt, session, withSpec, withStatus } from '../../fixtures/sessions.js';

const NOW = new Date('2030-01-01T00:01:00Z');

function status(over: Partial<StatusInputs> = {}): SandboxSessionStatus {
  return computeStatus({
    session: session(),
    now: NOW,
    secretReady: true,
    outcome: { kind: 'active' },
    ...over,
  });
}

function readyCond(s: SandboxSessionStatus): Record<string, unknown> | undefined {
  return s.conditions?.find((c) => c.type === 'Ready');
}

describe('computeStatus: the Ready condition', () => {
  it.each<[string, Partial<StatusInputs>, string, string, RegExp]>([
    ['no Secret yet', { secretReady: false }, 'False', 'Creating', /Creating Secret sbs-demo-token/],
    ['no Pod yet', {}, 'False', 'Creating', /Creating Pod sbs-demo/],
    [
      'waiting for a previous child',
      { pod: undefined, waiting: 'Waiting for Pod X' },
      'False',
      'Creating',
      /Waiting for Pod X/,
    ],
    ['Pod not scheduled yet', { pod: podView() }, 'False', 'PodPending', /waiting to be scheduled/],
    ['Pod unschedulable', { pod: podView(unschedulable) }, 'False', 'Unschedulable', /0\/1 nodes/],
    [
      'image pull failing',
      { pod: podView(waiting('ImagePullBackOff', 'back-off')) },
      'False',
      'ImagePullFailed',
      /ImagePullBackOff: back-off/,
    ],
    [
      'image never pulled',
      { pod: podView(waiting('ErrImageNeverPull')) },
      'False',
      'ImagePullFailed',
      /ErrImageNeverPull/,
    ],
    [
      'crash looping',
      { pod: podView(waiting('CrashLoopBackOff')) },
      'False',
      'PodFailed',
      /CrashLoopBackOff/,
    ],
    [
      'Pod failed (evicted)',
      { pod: podView(phase('Failed', 'Evicted')) },
      'False',
      'PodFailed',
      /phase Failed \(Evicted\)/,
    ],
    ['Pod succeeded', { pod: podView(phase('Succeeded')) }, 'False', 'PodFailed', /phase Succeeded/],
    ['Pod being deleted', { pod: podView(ready, deleting) }, 'False', 'PodPending', /being deleted/],
    [
      'Running but probe not passing',
      { pod: podView(scheduled, phase('Running')) },
      'False',
      'PodPending',
      /waiting for it to become ready/,
    ],
    ['Ready', { pod: podView(ready) }, 'True', 'SandboxReady', /ready/],
    [
      'Ready pod but Secret missing',
      { pod: podView(ready), secretReady: false },
      'False',
      'Creating',
      /Secret/,
    ],
  ])('%s', (_name, over, condStatus, reason, message) => {
    const c = readyCond(status(over));
    expect(c).toMatchObject({ status: condStatus, reason, observedGeneration: 1 });
    expect(String(c?.message)).toMatch(message);
  });

  it('is not Ready without a Pod IP', () => {
    const noIP: PodView = { ...podView(ready), podIP: undefined };
    expect(readyCond(status({ pod: noIP }))).toMatchObject({ status: 'False', reason: 'PodPending' });
  });

  it('is not Ready when PodReady is False even if Running with an IP', () => {
    const p = podView(ready, (x) => {
      x.conditions = x.conditions.map((c) => (c.type === 'Ready' ? { ...c, status: 'False' } : c));
    });
    expect(readyCond(status({ pod: p }))).toMatchObject({ status: 'False' });
  });

  it('reports collection and failures with their reasons', () => {
    expect(
      readyCond(status({ pod: podView(ready), outcome: { kind: 'collected', reason: 'IdleTimeout' } })),
    ).toMatchObject({
      status: 'False',
      reason: 'IdleTimeout',
    });
    expect(
      readyCond(status({ outcome: { kind: 'failed', reason: 'NameConflict', message: 'Secret x exists' } })),
    ).toMatchObject({ status: 'False', reason: 'NameConflict', message: 'Secret x exists' });
  });
});

describe('computeStatus: the other fields', () => {
  it('fills Pod fields from a live Pod and sets readyTime once', () => {
    const s = status({ pod: podView(ready), expiresAt: new Date('2030-01-01T00:31:00.400Z') });
    expect(s).toMatchObject({
      observedGeneration: 1,
      podName: 'sbs-demo',
      secretName: 'sbs-demo-token',
      podIP: '198.18.0.5',
      nodeName: 'node-1',
      readyTime: '2030-01-01T00:01:00Z',
      expiresAt: '2030-01-01T00:31:00Z',
      phase: 'Ready',
    });
    const later = computeStatus({
      session: session(withStatus(s)),
      now: new Date('2030-01-01T00:09:00Z'),
      secretReady: true,
      pod: podView(ready),
      outcome: { kind: 'active' },
    });
    expect(later.readyTime).toBe('2030-01-01T00:01:00Z');
  });

  it('mirrors the PodScheduled condition, with a reason even when the scheduler gave none', () => {
    const s = status({ pod: podView(ready) });
    expect(s.conditions?.find((c) => c.type === 'PodScheduled')).toMatchObject({
      status: 'True',
      reason: 'Scheduled',
    });
    const u = status({ pod: podView(unschedulable) });
    expect(u.conditions?.find((c) => c.type === 'PodScheduled')).toMatchObject({
      status: 'False',
      reason: 'Unschedulable',
      message: '0/1 nodes are available',
    });
    expect(status({ pod: podView() }).conditions?.map((c) => c.type)).toEqual(['Ready']);
  });

  it('mirrors the activity annotation into lastActivityTime', () => {
    expect(status({ session: session(activeAt('2030-01-01T00:00:30.900Z')) }).lastActivityTime).toBe(
      '2030-01-01T00:00:30Z',
    );
    expect(status().lastActivityTime).toBeUndefined();
  });

  it('keeps lastTransitionTime while the condition status holds, and moves it when it flips', () => {
    const first = status({ pod: podView() });
    const s1 = session(withStatus(first));
    const later = new Date('2030-01-01T00:05:00Z');
    const same = computeStatus({
      session: s1,
      now: later,
      secretReady: true,
      pod: podView(waiting('ErrImagePull')),
      outcome: { kind: 'active' },
    });
    expect(readyCond(same)).toMatchObject({
      reason: 'ImagePullFailed',
      lastTransitionTime: '2030-01-01T00:01:00Z',
    });
    const flipped = computeStatus({
      session: s1,
      now: later,
      secretReady: true,
      pod: podView(ready),
      outcome: { kind: 'active' },
    });
    expect(readyCond(flipped)).toMatchObject({ status: 'True', lastTransitionTime: '2030-01-01T00:05:00Z' });
  });

  it('clears the child fields when collected, keeps readyTime and expiresAt', () => {
    const prev = status({ pod: podView(ready) });
    const s = computeStatus({
      session: session(withStatus(prev), withSpec({ shutdownPolicy: 'Retain', idleTimeoutSeconds: 60 })),
      now: NOW,
      secretReady: true,
      pod: podView(ready),
      outcome: { kind: 'collected', reason: 'IdleTimeout' },
      expiresAt: new Date('2030-01-01T00:02:00Z'),
    });
    expect(s.podName).toBeUndefined();
    expect(s.podIP).toBeUndefined();
    expect(s.conditions?.map((c) => c.type)).toEqual(['Ready']);
    expect(s).toMatchObject({
      phase: 'Terminated',
      readyTime: prev.readyTime,
      expiresAt: '2030-01-01T00:02:00Z',
    });
    expect(readyCond(s)?.message).toMatch(/No activity for 60s/);
    expect(collectedReason(s)).toBe('IdleTimeout');
    expect(collectedReason(prev)).toBeUndefined();
  });

  it('derives the printer phase', () => {
    expect(status({ pod: podView() }).phase).toBe('Pending');
    expect(status({ pod: podView(waiting('CrashLoopBackOff')) }).phase).toBe('Failed');
    expect(status({ outcome: { kind: 'failed', reason: 'ReconcileError', message: 'x' } }).phase).toBe(
      'Failed',
    );
  });
});

describe('status comparison and patch', () => {
  it('equal ignores key order and undefined fields', () => {
    expect(
      statusEqual({ podName: 'a', phase: 'Pending' }, { phase: 'Pending', podName: 'a', podIP: undefined }),
    ).toBe(true);
    expect(statusEqual(undefined, {})).toBe(true);
    expect(statusEqual({ podIP: '1.2.3.4' }, {})).toBe(false);
  });

  it('patches removed fields to null and sends conditions whole', () => {
    const conditions = [
      { type: 'Ready', status: 'False' as const, reason: 'Creating', message: '', lastTransitionTime: 'x' },
    ];
    expect(statusPatch({ podIP: '1.2.3.4', podName: 'a' }, { podName: 'a', conditions })).toEqual({
      podName: 'a',
      conditions,
      podIP: null,
    });
  });
});
