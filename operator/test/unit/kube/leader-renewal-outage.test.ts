/* eslint-disable @typescript-eslint/require-await -- in-memory fakes implement async ports synchronously */
/**
 * A leader whose API server comes back shortly before the renew deadline keeps leading: after a
 * failed renewal it tries again every 500 ms, not only every retryPeriod (2 s). With retries
 * every 2 s, the attempts at 2, 4, 6 and 8 s of a 9.2 s outage fail and the one at 10 s is past
 * the deadline: leadership lost although the API server had been back for 0.8 s. The deadline
 * itself (the split-brain margin to leaseDuration) is unchanged: still lost after a longer outage.
 */
import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';

import { ConflictError } from '../../../src/kube/errors.js';
import { LeaderElector, type LeaseRecord, type LeaseStore } from '../../../src/kube/leader-election.js';
import { MemoryLogger } from '../../fakes/fakes.js';

class FakeLease implements LeaseStore {
  record?: LeaseRecord;
  failing = false;
  private rv = 0;
  async get(): Promise<LeaseRecord | undefined> {
    if (this.failing) throw new Error('connect ECONNREFUSED');
    return this.record && { ...this.record };
  }
  async create(r: LeaseRecord): Promise<LeaseRecord> {
    if (this.failing) throw new Error('connect ECONNREFUSED');
    if (this.record) throw new ConflictError('exists');
    this.record = { ...r, resourceVersion: String(++this.rv) };
    return this.record;
  }
  async update(r: LeaseRecord): Promise<LeaseRecord> {
    if (this.failing) throw new Error('connect ECONNREFUSED');
    if (this.record?.resourceVersion !== r.resourceVersion) throw new ConflictError('conflict');
    this.record = { ...r, resourceVersion: String(++this.rv) };
    return this.record;
  }
}

describe('LeaderElector.keepRenewing across an API server outage', () => {
  beforeEach(() => {
    jest.useFakeTimers({ now: 1_000_000 });
  });
  afterEach(() => {
    jest.useRealTimers();
  });

  async function leaderThroughOutage(outageMs: number): Promise<{ lost: boolean; leader: LeaderElector }> {
    const lease = new FakeLease();
    const leader = new LeaderElector({
      store: lease,
      identity: 'a',
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2_000,
      logger: new MemoryLogger(),
    });
    const acquired = leader.acquire();
    await jest.advanceTimersByTimeAsync(0);
    expect(await acquired).toBe(true);
    let lost = false;
    lease.failing = true;
    const loop = leader.keepRenewing(() => (lost = true));
    await jest.advanceTimersByTimeAsync(outageMs);
    lease.failing = false;
    await jest.advanceTimersByTimeAsync(20_000 - outageMs);
    void leader.release();
    await jest.advanceTimersByTimeAsync(2_000);
    await loop;
    return { lost, leader };
  }

  it('keeps leading when the API server is back 0.8 s before the deadline', async () => {
    expect((await leaderThroughOutage(9_200)).lost).toBe(false);
  });

  it('still gives up when the outage outlasts the renew deadline', async () => {
    expect((await leaderThroughOutage(10_500)).lost).toBe(true);
  });
});
