import { describe, expect, it } from '@jest/globals';
import type { SandboxSessionStatus } from '@sandbox-platform/api';

import { transitionEvents } from '../../../src/controller/transitions.js';

function st(status: 'True' | 'False', reason: string, message = 'm'): SandboxSessionStatus {
  return {
    podName: 'sbs-demo',
    nodeName: 'node-1',
    podIP: '198.18.0.5',
    conditions: [{ type: 'Ready', status, reason, message, lastTransitionTime: '2030-01-01T00:00:00Z' }],
  };
}

describe('transitionEvents', () => {
  it('Ready when it becomes True', () => {
    expect(transitionEvents(st('False', 'PodPending'), st('True', 'SandboxReady'))).toEqual([
      {
        type: 'Normal',
        reason: 'Ready',
        action: 'Observe',
        note: 'Pod sbs-demo is ready on node node-1 with IP 198.18.0.5',
      },
    ]);
    expect(transitionEvents(undefined, st('True', 'SandboxReady'))).toHaveLength(1);
  });

  it('NotReady (Warning) when a Ready session stops being Ready', () => {
    expect(transitionEvents(st('True', 'SandboxReady'), st('False', 'PodFailed', 'crash'))).toEqual([
      { type: 'Warning', reason: 'NotReady', action: 'Observe', note: 'PodFailed: crash' },
    ]);
  });

  it('IdleTimeout and LifetimeExceeded as Normal events, even from Ready', () => {
    expect(transitionEvents(st('True', 'SandboxReady'), st('False', 'IdleTimeout'))[0]).toMatchObject({
      type: 'Normal',
      reason: 'IdleTimeout',
    });
    expect(transitionEvents(st('False', 'PodPending'), st('False', 'LifetimeExceeded'))[0]).toMatchObject({
      reason: 'LifetimeExceeded',
    });
  });

  it.each(['NameConflict', 'ReconcileError', 'PodFailed', 'ImagePullFailed', 'Unschedulable'])(
    '%s as a Warning when entered',
    (reason) => {
      expect(transitionEvents(st('False', 'Creating'), st('False', reason, 'why'))).toEqual([
        { type: 'Warning', reason, action: 'Reconcile', note: 'why' },
      ]);
    },
  );

  it('Suspended (Normal) when the session is suspended, even from Ready; never NotReady', () => {
    expect(transitionEvents(st('True', 'SandboxReady'), st('False', 'Suspended', 'idle'))).toEqual([
      { type: 'Normal', reason: 'Suspended', action: 'Suspend', note: 'idle' },
    ]);
  });

  it('Resumed (Normal) when a suspended session is no longer suspended, then what Ready became', () => {
    expect(transitionEvents(st('False', 'Suspended'), st('False', 'PodPending'))).toEqual([
      {
        type: 'Normal',
        reason: 'Resumed',
        action: 'Resume',
        note: 'Resumed (spec.suspend is false); creating Pod sbs-demo',
      },
    ]);
    expect(
      transitionEvents(st('False', 'Suspended'), st('False', 'WorkspaceNotBound', 'never')).map(
        (e) => e.reason,
      ),
    ).toEqual(['Resumed', 'WorkspaceNotBound']);
  });

  it('StorageClassNotFound and WorkspaceNotBound as Warnings; WorkspacePending as nothing', () => {
    expect(transitionEvents(st('False', 'Creating'), st('False', 'StorageClassNotFound', 'x'))).toEqual([
      { type: 'Warning', reason: 'StorageClassNotFound', action: 'Reconcile', note: 'x' },
    ]);
    expect(transitionEvents(st('False', 'WorkspacePending'), st('False', 'WorkspaceNotBound', 'y'))).toEqual([
      { type: 'Warning', reason: 'WorkspaceNotBound', action: 'Reconcile', note: 'y' },
    ]);
    expect(transitionEvents(st('False', 'Creating'), st('False', 'WorkspacePending'))).toEqual([]);
  });

  it('nothing when the condition did not change, or for benign progress', () => {
    expect(transitionEvents(st('False', 'PodFailed', 'a'), st('False', 'PodFailed', 'b'))).toEqual([]);
    expect(transitionEvents(st('False', 'Creating'), st('False', 'PodPending'))).toEqual([]);
    expect(transitionEvents(undefined, st('False', 'Creating'))).toEqual([]);
  });
});
