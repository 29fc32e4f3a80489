/* eslint-disable @typescript-eslint/require-await -- in-memory fakes implement async ports synchronously */
import { describe, expect, it } from '@jest/globals';

import { ConflictError } from '../../../src/kube/errors.js';
import { LeaderElector, type LeaseRecord, type LeaseStore } from '../../../src/kube/leader-election.js';
import { Supervisor, type SupervisedWorkload } from '../../../src/runtime/supervisor.js';
import { MemoryLogger } from '../../fakes/fakes.js';

class Lease implements LeaseStore {
  record?: LeaseRecord;
  failing = false;
  private rv = 0;
  async get(): Promise<LeaseRecord | undefined> {
    if (this.failing) throw new Error('down');
    return this.record;
  }
  async create(r: LeaseRecord): Promise<LeaseRecord> {
    if (this.record) throw new ConflictError('exists');
    return (this.record = { ...r, resourceVersion: String(++this.rv) });
  }
  async update(r: LeaseRecord): Promise<LeaseRecord> {
    if (this.failing) throw new Error('down');
    if (this.record?.resourceVersion !== r.resourceVersion) throw new ConflictError('conflict');
    return (this.record = { ...r, resourceVersion: String(++this.rv) });
  }
}

class Work implements SupervisedWorkload {
  readonly log: string[];
  isStarted = false;
  constructor(log: string[]) {
    this.log = log;
  }
  async warm(): Promise<void> {
    this.log.push('warm');
  }
  async start(): Promise<void> {
    this.log.push('start');
    this.isStarted = true;
  }
  async stop(): Promise<boolean> {
    this.log.push('stop');
    await new Promise((r) => setTimeout(r, 10));
    this.log.push('drained');
    return true;
  }
}

function setup(
  lease: Lease,
  identity = 'me',
): { sup: Supervisor; log: string[]; work: Work; exits: number[] } {
  const log: string[] = [];
  const work = new Work(log);
  const exits: number[] = [];
  const elector = new LeaderElector({
    store: lease,
    identity,
    leaseDurationMs: 150,
    renewDeadlineMs: 100,
    retryPeriodMs: 10,
    logger: new MemoryLogger(),
  });
  const sup = new Supervisor({
    workload: work,
    elector,
    shutdownTimeoutMs: 1000,
    logger: new MemoryLogger(),
    onLeader: (leading) => log.push(leading ? 'leader' : 'not-leader'),
    exit: (code) => {
      log.push(`exit ${code}`);
      exits.push(code);
    },
  });
  return { sup, log, work, exits };
}

/** Resolves once `done()` holds (polled every 5 ms; jest's timeout bounds it). */
async function until(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((r) => setTimeout(r, 5));
}

describe('Supervisor', () => {
  it('starts work only after acquiring the Lease; shutdown drains, then releases, then exits 0', async () => {
    const lease = new Lease();
    const { sup, log } = setup(lease);
    expect(sup.isReady()).toBe(true);
    await sup.run();
    expect(log).toEqual(['warm', 'leader', 'start']);
    expect(sup.isReady()).toBe(true);
    await sup.shutdown('SIGTERM');
    expect(log).toEqual(['warm', 'leader', 'start', 'stop', 'drained', 'not-leader', 'exit 0']);
    expect(lease.record?.holderIdentity).toBe('');
    expect(sup.isReady()).toBe(false);
  });

  it('a shutdown asked for as a failure (stale watch) drains and hands the Lease over like SIGTERM, then exits 1', async () => {
    const lease = new Lease();
    const { sup, log } = setup(lease);
    await sup.run();
    await sup.shutdown('session watch stale', true);
    expect(log).toEqual(['warm', 'leader', 'start', 'stop', 'drained', 'not-leader', 'exit 1']);
    expect(lease.record?.holderIdentity).toBe('');
  });

  it('a standby does not work, is ready, and exits 0 on SIGTERM without touching the Lease', async () => {
    const lease = new Lease();
    lease.record = {
      holderIdentity: 'other',
      leaseDurationSeconds: 15,
      resourceVersion: 'x',
      renewTime: new Date(),
    };
    const { sup, log } = setup(lease);
    const running = sup.run();
    await new Promise((r) => setTimeout(r, 50));
    // Warm (caches listed and watching, issue 32) but not working.
    expect(log).toEqual(['warm']);
    expect(sup.isReady()).toBe(true);
    await sup.shutdown('SIGTERM');
    await running;
    expect(log).toEqual(['warm', 'stop', 'drained', 'not-leader', 'exit 0']);
    expect(lease.record.holderIdentity).toBe('other');
  });

  it('campaigns only once warm: a restarted leader (same identity) leaves its stale Lease to a warm standby', async () => {
    // The crashed leader's Lease names the restarted container's identity ('me'), not yet expired.
    const lease = new Lease();
    lease.record = {
      holderIdentity: 'me',
      leaseDurationSeconds: 0.15,
      resourceVersion: 'x',
      renewTime: new Date(),
    };
    const log: string[] = [];
    let warmed!: () => void;
    const cold = new (class extends Work {
      override async warm(): Promise<void> {
        log.push('warming');
        await new Promise<void>((r) => (warmed = r));
        log.push('warm');
      }
    })(log);
    const restarted = new Supervisor({
      workload: cold,
      elector: new LeaderElector({
        store: lease,
        identity: 'me',
        leaseDurationMs: 150,
        renewDeadlineMs: 100,
        retryPeriodMs: 10,
        logger: new MemoryLogger(),
      }),
      shutdownTimeoutMs: 1000,
      logger: new MemoryLogger(),
      onLeader: (leading) => log.push(leading ? 'restarted leader' : 'restarted not-leader'),
      exit: () => undefined,
    });
    const standby = setup(lease, 'standby');
    const runs = [restarted.run(), standby.sup.run()];
    // The Lease expires (150 ms); the warm standby takes it while the restarted one still lists.
    await until(() => standby.work.isStarted);
    expect(lease.record?.holderIdentity).toBe('standby');
    expect(standby.log).toEqual(['warm', 'leader', 'start']);
    expect(log).toEqual(['warming']);
    warmed();
    await until(() => log.includes('warm'));
    // Warm now, it waits as a standby: the Lease is the other replica's (its renewals keep it).
    await new Promise((r) => setTimeout(r, 100));
    expect(log).toEqual(['warming', 'warm']);
    expect(cold.isStarted).toBe(false);
    expect(lease.record?.holderIdentity).toBe('standby');
    await restarted.shutdown('SIGTERM');
    await standby.sup.shutdown('SIGTERM');
    await Promise.all(runs);
  });

  it('exits 1 at once when the Lease cannot be renewed', async () => {
    const lease = new Lease();
    const { sup, exits, log } = setup(lease);
    await sup.run();
    lease.failing = true;
    await new Promise((r) => setTimeout(r, 300));
    expect(exits).toEqual([1]);
    expect(log).not.toContain('stop');
  });
});
