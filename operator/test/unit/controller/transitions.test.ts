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

  it('nothing when the condition did not change, or for benign progress', () => {
    expect(transitionEvents(st('False', 'PodFailed', 'a'), st('False', 'PodFailed', 'b'))).toEqual([]);
    expect(transitionEvents(st('False', 'Creating'), st('False', 'PodPending'))).toEqual([]);
    expect(transitionEvents(undefined, st('False', 'Creating'))).toEqual([]);
  });
});
