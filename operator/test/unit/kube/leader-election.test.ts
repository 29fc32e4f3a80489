/* eslint-disable @typescript-eslint/require-await -- in-memory fakes implement async ports synchronously */
import { describe, expect, it, jest } from '@jest/globals';

import { ConflictError } from '../../../src/kube/errors.js';
import { LeaderElector, type LeaseRecord, type LeaseStore } from '../../../src/kube/leader-election.js';
import { MemoryLogger } from '../../fakes/fakes.js';

/** One Lease with resourceVersion checks, shared by the candidates of a test. */
class FakeLease implements LeaseStore {
  record?: LeaseRecord;
  failing = false;
  private rv = 0;
  async get(): Promise<LeaseRecord | undefined> {
    if (this.failing) throw new Error('api down');
    return this.record && { ...this.record };
  }
  async create(r: LeaseRecord): Promise<LeaseRecord> {
    if (this.failing) throw new Error('api down');
    if (this.record) throw new ConflictError('exists');
    this.record = { ...r, resourceVersion: String(++this.rv) };
    return this.record;
  }
  async update(r: LeaseRecord): Promise<LeaseRecord> {
    if (this.failing) throw new Error('api down');
    if (!this.record || this.record.resourceVersion !== r.resourceVersion)
      throw new ConflictError('conflict');
    this.record = { ...r, resourceVersion: String(++this.rv) };
    return this.record;
  }
}

function candidate(store: LeaseStore, identity: string, clock: { t: number }, over = {}): LeaderElector {
  return new LeaderElector({
    store,
    identity,
    leaseDurationMs: 15_000,
    renewDeadlineMs: 10_000,
    retryPeriodMs: 2_000,
    logger: new MemoryLogger(),
    now: () => clock.t,
    ...over,
  });
}

describe('LeaderElector.tryAcquireOrRenew', () => {
  it('creates the Lease when there is none', async () => {
    const lease = new FakeLease();
    const clock = { t: 1_000 };
    expect(await candidate(lease, 'a', clock).tryAcquireOrRenew()).toBe(true);
    expect(lease.record).toMatchObject({
      holderIdentity: 'a',
      leaseDurationSeconds: 15,
      leaseTransitions: 0,
    });
    expect(lease.record?.renewTime).toEqual(new Date(1_000));
  });

  it('does not take a Lease another holder keeps renewing', async () => {
    const lease = new FakeLease();
    const clock = { t: 0 };
    const a = candidate(lease, 'a', clock);
    const b = candidate(lease, 'b', clock);
    await a.tryAcquireOrRenew();
    for (let i = 0; i < 20; i++) {
      clock.t += 2_000;
      expect(await a.tryAcquireOrRenew()).toBe(true);
      expect(await b.tryAcquireOrRenew()).toBe(false);
    }
    expect(lease.record?.holderIdentity).toBe('a');
  });

  it('takes over once the holder stopped renewing for the lease duration (on its own clock)', async () => {
    const lease = new FakeLease();
    const clock = { t: 0 };
    await candidate(lease, 'a', clock).tryAcquireOrRenew();
    const b = candidate(lease, 'b', clock);
    clock.t = 5_000;
    expect(await b.tryAcquireOrRenew()).toBe(false);
    clock.t = 19_999;
    expect(await b.tryAcquireOrRenew()).toBe(false);
    clock.t = 20_000;
    expect(await b.tryAcquireOrRenew()).toBe(true);
    expect(lease.record).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1 });
    expect(lease.record?.acquireTime).toEqual(new Date(20_000));
  });

  it("takes a Lease created empty (the chart's `spec: {}`) at once, keeping its labels and annotations", async () => {
    const lease = new FakeLease();
    const helm = {
      labels: { 'app.kubernetes.io/managed-by': 'Helm' },
      annotations: { 'meta.helm.sh/release-name': 'sandbox' },
    };
    lease.record = { resourceVersion: '7', ...helm };
    const clock = { t: 3_000 };
    const a = candidate(lease, 'a', clock);
    expect(await a.acquire()).toBe(true);
    expect(lease.record).toMatchObject({ holderIdentity: 'a', leaseDurationSeconds: 15, ...helm });
    expect(lease.record.acquireTime).toEqual(new Date(3_000));
    clock.t = 5_000;
    expect(await a.tryAcquireOrRenew()).toBe(true);
    expect(lease.record).toMatchObject({ holderIdentity: 'a', ...helm });
    await a.release();
    expect(lease.record).toMatchObject({ holderIdentity: '', ...helm });
  });

  it('keeps acquireTime on renewal', async () => {
    const lease = new FakeLease();
    const clock = { t: 0 };
    const a = candidate(lease, 'a', clock);
    await a.tryAcquireOrRenew();
    clock.t = 4_000;
    await a.tryAcquireOrRenew();
    expect(lease.record?.acquireTime).toEqual(new Date(0));
    expect(lease.record?.renewTime).toEqual(new Date(4_000));
  });

  it('loses a race cleanly (409 is "not leader", not an error)', async () => {
    const lease = new FakeLease();
    const clock = { t: 0 };
    const racing: LeaseStore = {
      get: () => lease.get(),
      create: async (r) => {
        await lease.create({ ...r, holderIdentity: 'other' });
        return lease.create(r);
      },
      update: (r) => lease.update(r),
    };
    expect(await candidate(racing, 'a', clock).tryAcquireOrRenew()).toBe(false);
  });

  it('takes a released Lease at once', async () => {
    const lease = new FakeLease();
    const clock = { t: 0 };
    const a = candidate(lease, 'a', clock, { retryPeriodMs: 5 });
    expect(await a.acquire()).toBe(true);
    await a.release();
    expect(lease.record?.holderIdentity).toBe('');
    expect(await candidate(lease, 'b', clock).tryAcquireOrRenew()).toBe(true);
  });
});

describe('LeaderElector loops', () => {
  it('gives up leadership when renewals fail for the renew deadline, not before', async () => {
    jest.useFakeTimers({ now: 1_000_000 });
    try {
      const lease = new FakeLease();
      const a = candidate(
        lease,
        'a',
        { t: 0 },
        {
          retryPeriodMs: 5,
          renewDeadlineMs: 50,
          leaseDurationMs: 100,
          now: Date.now,
        },
      );
      expect(await a.acquire()).toBe(true);
      lease.failing = true;
      let lost = false;
      const loop = a.keepRenewing(() => (lost = true));
      await jest.advanceTimersByTimeAsync(49);
      expect([lost, a.isLeader]).toEqual([false, true]);
      await jest.advanceTimersByTimeAsync(1);
      expect([lost, a.isLeader]).toEqual([true, false]);
      await loop;
    } finally {
      jest.useRealTimers();
    }
  });

  it('acquire() returns false when released while waiting', async () => {
    const lease = new FakeLease();
    const clock = { t: 0 };
    await candidate(lease, 'a', clock).tryAcquireOrRenew();
    const b = candidate(lease, 'b', clock, { retryPeriodMs: 5 });
    const waiting = b.acquire();
    setTimeout(() => void b.release(), 30);
    expect(await waiting).toBe(false);
    expect(lease.record?.holderIdentity).toBe('a');
  });
});
