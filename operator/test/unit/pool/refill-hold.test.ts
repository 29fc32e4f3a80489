/**
 * The refill hold (docs/adr/0016, "Claim latency"): a pool's reconcile waits while a claim of one of
 * its warm Pods is in flight and for the settle time after the last one ended, never longer than
 * the bound in one stretch, and each pool on its own.
 */
import { describe, expect, it } from '@jest/globals';

import { RefillHold } from '../../../src/pool/refill-hold.js';

const SETTLE = 150;
const MAX = 1000;

describe('RefillHold', () => {
  it('lets a pool with no claim run at once, and keeps nothing for it', () => {
    const hold = new RefillHold(SETTLE, MAX);
    expect(hold.holdMs('team-a/warm', 0)).toBe(0);
    expect(hold.size).toBe(0);
  });

  it('holds the pool while a claim is in flight, then for the settle time after it ended', () => {
    const hold = new RefillHold(SETTLE, MAX);
    hold.claimStarted('team-a/warm');
    expect(hold.holdMs('team-a/warm', 0)).toBe(SETTLE);
    expect(hold.holdMs('team-a/warm', 100)).toBe(SETTLE);
    hold.claimEnded('team-a/warm', 120);
    expect(hold.holdMs('team-a/warm', 200)).toBe(70);
    expect(hold.holdMs('team-a/warm', 270)).toBe(0);
    expect(hold.size).toBe(0);
  });

  it('holds until the last of overlapping claims ended', () => {
    const hold = new RefillHold(SETTLE, MAX);
    hold.claimStarted('team-a/warm');
    hold.claimStarted('team-a/warm');
    hold.claimEnded('team-a/warm', 10);
    expect(hold.holdMs('team-a/warm', 500)).toBe(SETTLE);
    hold.claimEnded('team-a/warm', 600);
    expect(hold.holdMs('team-a/warm', 700)).toBe(50);
    expect(hold.holdMs('team-a/warm', 750)).toBe(0);
  });

  it('never holds longer than the bound in one stretch: a steady stream of claims still refills', () => {
    const hold = new RefillHold(SETTLE, MAX);
    hold.claimStarted('team-a/warm');
    expect(hold.holdMs('team-a/warm', 0)).toBe(SETTLE);
    expect(hold.holdMs('team-a/warm', 900)).toBe(100);
    expect(hold.holdMs('team-a/warm', 1000)).toBe(0);
    // The pass ran; the next one is held again, in a new stretch.
    expect(hold.holdMs('team-a/warm', 1010)).toBe(SETTLE);
    expect(hold.holdMs('team-a/warm', 2010)).toBe(0);
  });

  it('holds each pool on its own', () => {
    const hold = new RefillHold(SETTLE, MAX);
    hold.claimStarted('team-a/warm');
    expect(hold.holdMs('team-a/other', 0)).toBe(0);
    expect(hold.holdMs('team-b/warm', 0)).toBe(0);
    expect(hold.holdMs('team-a/warm', 0)).toBe(SETTLE);
  });

  it('forgets a deleted pool, and ignores an end without a start', () => {
    const hold = new RefillHold(SETTLE, MAX);
    hold.claimEnded('team-a/warm', 0);
    expect(hold.size).toBe(0);
    hold.claimStarted('team-a/warm');
    hold.forget('team-a/warm');
    expect(hold.holdMs('team-a/warm', 0)).toBe(0);
  });
});
