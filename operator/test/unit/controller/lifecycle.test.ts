import { describe, expect, it } from '@jest/globals';

import {
  deadlines,
  decide,
  idleDeadline,
  lifecycleInputs,
  lifetimeDeadline,
  timeLeft,
  type LifecycleInputs,
} from '../../../src/controller/lifecycle.js';
import { activeAt, session, withSpec } from '../../fixtures/sessions.js';

const T0 = new Date('2030-01-01T00:00:00Z');
const at = (seconds: number): Date => new Date(T0.getTime() + seconds * 1000);
const inputs = (over: Partial<LifecycleInputs> = {}): LifecycleInputs => ({
  createdAt: T0,
  idleTimeoutSeconds: 600,
  ...over,
});

describe('idle deadline', () => {
  it('counts from creation while the session was never ready nor used', () => {
    expect(idleDeadline(inputs())).toEqual(at(600));
  });

  it('counts from the ready time once ready', () => {
    expect(idleDeadline(inputs({ readyTime: at(30) }))).toEqual(at(630));
  });

  it('counts from the last activity when it is later', () => {
    expect(idleDeadline(inputs({ readyTime: at(30), lastActivity: at(100) }))).toEqual(at(700));
  });

  it('ignores an activity stamp older than the ready time', () => {
    expect(idleDeadline(inputs({ readyTime: at(30), lastActivity: at(10) }))).toEqual(at(630));
  });

  it('starts again at the last resume when that is later than the ready time and the activity', () => {
    expect(idleDeadline(inputs({ readyTime: at(30), lastActivity: at(100), resumedAt: at(900) }))).toEqual(
      at(1500),
    );
  });

  it('keeps the later activity when the resume is older', () => {
    expect(idleDeadline(inputs({ readyTime: at(30), lastActivity: at(1000), resumedAt: at(900) }))).toEqual(
      at(1600),
    );
  });

  it('does not exist while the session is suspended (the lifetime still does)', () => {
    expect(idleDeadline(inputs({ suspended: true }))).toBeUndefined();
    expect(deadlines(inputs({ suspended: true, maxLifetimeSeconds: 3600 }))).toMatchObject({
      expiresAt: at(3600),
      reason: 'LifetimeExceeded',
    });
  });

  it('is disabled by idleTimeoutSeconds 0', () => {
    expect(idleDeadline(inputs({ idleTimeoutSeconds: 0, lastActivity: at(5) }))).toBeUndefined();
  });
});

describe('lifetime deadline', () => {
  it('is creation + maxLifetimeSeconds, activity notwithstanding', () => {
    expect(lifetimeDeadline(inputs({ maxLifetimeSeconds: 3600, lastActivity: at(3599) }))).toEqual(at(3600));
  });

  it('is absent without maxLifetimeSeconds', () => {
    expect(lifetimeDeadline(inputs())).toBeUndefined();
  });

  it('handles 30 days exactly (beyond a 32-bit setTimeout)', () => {
    expect(lifetimeDeadline(inputs({ maxLifetimeSeconds: 2_592_000 }))).toEqual(at(2_592_000));
  });
});

describe('deadlines', () => {
  it('picks the idle deadline when it is earlier', () => {
    expect(deadlines(inputs({ maxLifetimeSeconds: 3600 }))).toMatchObject({
      expiresAt: at(600),
      reason: 'IdleTimeout',
    });
  });

  it('picks the lifetime deadline when it is earlier, and on a tie', () => {
    expect(deadlines(inputs({ maxLifetimeSeconds: 300 }))).toMatchObject({
      expiresAt: at(300),
      reason: 'LifetimeExceeded',
    });
    expect(deadlines(inputs({ maxLifetimeSeconds: 600 }))).toMatchObject({
      expiresAt: at(600),
      reason: 'LifetimeExceeded',
    });
  });

  it('has no expiry when neither applies', () => {
    expect(deadlines(inputs({ idleTimeoutSeconds: 0 })).expiresAt).toBeUndefined();
  });
});

describe('decide', () => {
  it('requeues exactly at the deadline', () => {
    expect(decide(at(100), inputs(), 250)).toEqual({
      expired: false,
      expiresAt: at(600),
      requeueAfterMs: 500_000,
    });
    expect(timeLeft(at(100), at(600))).toBe(500_000);
  });

  it('never requeues sooner than the floor', () => {
    expect(decide(new Date(at(600).getTime() - 10), inputs(), 250)).toMatchObject({
      expired: false,
      requeueAfterMs: 250,
    });
  });

  it('expires at the deadline itself, with the reason', () => {
    expect(decide(at(600), inputs(), 250)).toEqual({
      expired: true,
      expiresAt: at(600),
      reason: 'IdleTimeout',
    });
    expect(decide(at(301), inputs({ maxLifetimeSeconds: 300 }), 250)).toMatchObject({
      expired: true,
      reason: 'LifetimeExceeded',
    });
  });

  it('an activity stamp postpones expiry', () => {
    expect(decide(at(650), inputs({ lastActivity: at(100) }), 250)).toMatchObject({
      expired: false,
      requeueAfterMs: 50_000,
    });
  });

  it('asks for no requeue when nothing expires', () => {
    expect(decide(at(1e6), inputs({ idleTimeoutSeconds: 0 }), 250)).toEqual({ expired: false });
  });
});

describe('lifecycleInputs', () => {
  it('reads creation, activity annotation and limits from the session', () => {
    const s = session(
      activeAt('2030-01-01T00:05:00.250Z'),
      withSpec({ idleTimeoutSeconds: 60, maxLifetimeSeconds: 120 }),
    );
    expect(lifecycleInputs(s, at(30))).toEqual({
      createdAt: T0,
      readyTime: at(30),
      lastActivity: new Date('2030-01-01T00:05:00.250Z'),
      idleTimeoutSeconds: 60,
      maxLifetimeSeconds: 120,
      resumedAt: undefined,
      suspended: false,
    });
  });

  it('reads spec.suspend and takes the resume time as given', () => {
    const s = session(withSpec({ suspend: true }));
    expect(lifecycleInputs(s, undefined, at(40))).toMatchObject({ suspended: true, resumedAt: at(40) });
  });

  it('ignores a malformed activity annotation and defaults the idle timeout', () => {
    const s = session(activeAt('yesterday'), withSpec({ idleTimeoutSeconds: undefined }));
    expect(lifecycleInputs(s, undefined)).toMatchObject({
      lastActivity: undefined,
      idleTimeoutSeconds: 1800,
    });
  });

  it('accepts RFC 3339 offsets', () => {
    const s = session(activeAt('2030-01-01T01:00:00+01:00'));
    expect(lifecycleInputs(s, undefined).lastActivity).toEqual(T0);
  });
});
