/* eslint-disable @typescript-eslint/require-await -- in-memory fakes implement async ports synchronously */
/**
 * The workload's start order: no reconcile runs before every informer has listed, although the
 * informers' initial LISTs queue keys while the others are still listing. (An operator restarted
 * while a warm Pod bind was in flight reconciled the session from the child informers' LIST before
 * the pool informers had listed, and created a cold Pod next to the claimed warm one.)
 */
import { describe, expect, it } from '@jest/globals';

import type { SessionStore } from '../../../src/kube/ports.js';
import { Resync } from '../../../src/kube/resync.js';
import { WorkQueue } from '../../../src/state/work-queue.js';
import { Workload, type Startable } from '../../../src/runtime/workload.js';
import { MemoryLogger } from '../../fakes/fakes.js';

const BACKOFF = { baseMs: 100, maxMs: 1000, jitter: 0.2 };

describe('Workload.start', () => {
  it('runs no reconcile before every informer has listed, then the keys their LISTs queued', async () => {
    const seen: Array<{ key: string; poolsListed: boolean }> = [];
    let poolsListed = false;
    let listPools = (): void => undefined;
    const queue = new WorkQueue({
      held: true,
      concurrency: 4,
      backoff: BACKOFF,
      handler: async (key) => {
        seen.push({ key, poolsListed });
        return {};
      },
    });
    // The child informers: their LIST finds the session's Secret and queues its owner.
    const children: Startable = {
      start: async () => queue.add('team-a/demo'),
      stop: async () => undefined,
    };
    // The pool informers: still listing when the child informers are done.
    const pools: Startable = {
      start: () =>
        new Promise<void>((resolve) => {
          listPools = () => {
            poolsListed = true;
            resolve();
          };
        }),
      stop: async () => undefined,
    };
    const sessions = { listKeys: async () => [{ namespace: 'team-a', name: 'demo' }] };
    const logger = new MemoryLogger();
    const workload = new Workload({
      informers: [children, pools],
      queue,
      resync: new Resync({
        sessions: sessions as unknown as SessionStore,
        intervalMs: 60_000,
        enqueue: (key) => queue.add(key),
        known: () => [],
        logger,
      }),
      startWatch: async () => ({ close: () => undefined }),
      logger,
    });
    const started = workload.start();
    await new Promise((resolve) => setImmediate(resolve));
    expect(seen).toEqual([]);
    listPools();
    await started;
    await new Promise((resolve) => setImmediate(resolve));
    // Queued by the LIST and again by the resync (the second run may follow the first).
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.filter((s) => !s.poolsListed)).toEqual([]);
    await workload.stop(1000);
  });

  it('warm (a standby): caches list and the watch runs, nothing is reconciled; the leader then takes new sessions before replays', async () => {
    const seen: string[] = [];
    const queue = new WorkQueue({
      held: true,
      concurrency: 1,
      backoff: BACKOFF,
      handler: async (key) => {
        seen.push(key);
        return {};
      },
    });
    const starts: string[] = [];
    // The child informers' LIST finds the children of 3 settled sessions.
    const caches: Startable = {
      start: async () => {
        starts.push('caches');
        ['ns/old-1', 'ns/old-2', 'ns/old-3'].forEach((k) => queue.add(k));
      },
      stop: async () => undefined,
    };
    const controllers: Startable = {
      start: async () => void starts.push('controllers'),
      stop: async () => undefined,
    };
    const logger = new MemoryLogger();
    const workload = new Workload({
      caches: [caches],
      informers: [controllers],
      queue,
      resync: new Resync({
        sessions: { listKeys: async () => [] } as unknown as SessionStore,
        intervalMs: 60_000,
        enqueue: (key) => queue.add(key, 'low'),
        known: () => [],
        logger,
      }),
      startWatch: async () => {
        starts.push('watch');
        return { close: () => undefined };
      },
      logger,
    });
    await workload.warm();
    await workload.warm();
    // While standing by, a session is created: the watch queues it (held).
    queue.add('ns/new');
    await new Promise((resolve) => setImmediate(resolve));
    expect([starts, seen, queue.depth]).toEqual([['caches', 'watch'], [], 4]);
    await workload.start();
    await new Promise((resolve) => setImmediate(resolve));
    expect(starts).toEqual(['caches', 'watch', 'controllers']);
    expect(seen).toEqual(['ns/new', 'ns/old-1', 'ns/old-2', 'ns/old-3']);
    await workload.stop(1000);
  });
});
