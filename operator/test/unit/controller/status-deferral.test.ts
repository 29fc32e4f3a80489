import { describe, expect, it, jest } from '@jest/globals';
import type { SandboxSessionStatus } from '@sandbox-platform/api';

import {
  StatusDeferral,
  isProgressOnly,
  releaseWhenSettled,
} from '../../../src/controller/status-deferral.js';

const withReady = (status: 'True' | 'False', reason: string): SandboxSessionStatus => ({
  conditions: [{ type: 'Ready', status, reason, message: '', lastTransitionTime: '2030-01-01T00:00:00Z' }],
});

describe('isProgressOnly', () => {
  it.each([
    ['False', 'Creating', true],
    ['False', 'PodPending', true],
    ['True', 'Ready', false],
    ['False', 'Unschedulable', false],
    ['False', 'ImagePullFailed', false],
    ['False', 'ReconcileError', false],
    ['False', 'IdleTimeout', false],
  ] as const)('Ready=%s/%s -> %s', (status, reason, expected) => {
    expect(isProgressOnly(withReady(status, reason))).toBe(expected);
  });

  it('a status without a Ready condition is not progress-only', () => {
    expect(isProgressOnly({})).toBe(false);
  });
});

describe('StatusDeferral', () => {
  it('holds only progress-only writes, only while busy', () => {
    const d = new StatusDeferral(1000, 0);
    expect(d.hold('a', 0, false, true)).toBe(false);
    expect(d.hold('a', 0, true, false)).toBe(false);
    expect(d.hold('a', 0, true, true)).toBe(true);
    expect(d.size).toBe(1);
  });

  it('lets a write through once it was held for the bound, counted from the first hold', () => {
    const d = new StatusDeferral(1000, 0);
    expect(d.hold('a', 100, true, true)).toBe(true);
    expect(d.hold('a', 600, true, true)).toBe(true);
    expect(d.hold('a', 1099, true, true)).toBe(true);
    expect(d.hold('a', 1100, true, true)).toBe(false);
    expect(d.size).toBe(0);
    // A later progress write starts a fresh bound.
    expect(d.hold('a', 5000, true, true)).toBe(true);
  });

  it('says when a held write is due, and lets every held write through once released', () => {
    const d = new StatusDeferral(1000, 0);
    expect(d.dueInMs('a', 0)).toBe(0);
    d.hold('a', 100, true, true);
    d.hold('b', 300, true, true);
    expect(d.dueInMs('a', 400)).toBe(700);
    expect(d.release().sort()).toEqual(['a', 'b']);
    // Busy again when reconciled (the released keys themselves are queued): written all the same.
    expect(d.hold('a', 500, true, true)).toBe(false);
    expect(d.hold('b', 500, true, true)).toBe(false);
    expect(d.size).toBe(0);
    // Only once: a later progress write is held again.
    expect(d.hold('a', 600, true, true)).toBe(true);
  });

  it('keeps sessions apart and clears a session whose write was made or that is gone', () => {
    const d = new StatusDeferral(1000, 0);
    d.hold('a', 0, true, true);
    d.hold('b', 500, true, true);
    expect(d.hold('a', 900, false, true)).toBe(false);
    expect(d.size).toBe(1);
    d.forget('b');
    expect(d.size).toBe(0);
  });
});

describe('StatusDeferral: a burst lasts until the settle period after its last busy moment', () => {
  it('holds a progress write made while nothing else is queued, within the settle period of a busy moment', () => {
    const d = new StatusDeferral(60_000, 10_000);
    // A quiet operator writes progress at once.
    expect(d.hold('a', 0, false, true)).toBe(false);
    // Another session saw work queued at 1 s: the burst runs until 11 s.
    expect(d.hold('b', 1000, true, true)).toBe(true);
    expect(d.hold('c', 5000, false, true)).toBe(true);
    expect(d.hold('c', 10_999, false, true)).toBe(true);
    expect(d.hold('c', 11_000, false, true)).toBe(false);
    // Ready (not progress) is never held, burst or not.
    expect(d.hold('b', 2000, true, false)).toBe(false);
  });
});

describe('releaseWhenSettled', () => {
  it('releases once the queue stayed idle for the settle period; each idle moment restarts the wait', () => {
    jest.useFakeTimers();
    try {
      let idle = true;
      let released = 0;
      const onIdle = releaseWhenSettled(
        () => idle,
        () => released++,
        10_000,
      );
      onIdle();
      jest.advanceTimersByTime(9_000);
      onIdle(); // the queue ran something and drained again
      jest.advanceTimersByTime(9_000);
      expect(released).toBe(0);
      jest.advanceTimersByTime(1_000);
      expect(released).toBe(1);
      // Busy when the wait ends: nothing released (the next idle moment starts another wait).
      onIdle();
      idle = false;
      jest.advanceTimersByTime(10_000);
      expect(released).toBe(1);
    } finally {
      jest.useRealTimers();
    }
  });
});
