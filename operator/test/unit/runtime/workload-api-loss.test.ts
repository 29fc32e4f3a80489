/* eslint-disable @typescript-eslint/require-await -- in-memory fakes implement async ports synchronously */
/**
 * The leader's start survives an API server that went away right after the Lease was won: the
 * first resync LIST fails, and the workload starts anyway (the session watch waits for the API
 * server and replays every session; the periodic resync lists again). Before, the failed LIST
 * rejected Workload.start, main() caught it and the process exited 1.
 */
import { describe, expect, it } from '@jest/globals';

import type { SessionStore } from '../../../src/kube/ports.js';
import { Resync } from '../../../src/kube/resync.js';
import { WorkQueue } from '../../../src/state/work-queue.js';
import { Workload } from '../../../src/runtime/workload.js';
import { MemoryLogger } from '../../fakes/fakes.js';

describe('Workload.start while the API server is gone', () => {
  it('starts although the first resync LIST failed, and says so in one warn line', async () => {
    const queue = new WorkQueue({
      held: true,
      concurrency: 1,
      backoff: { baseMs: 100, maxMs: 1000, jitter: 0.2 },
      handler: async () => ({}),
    });
    const refused = Object.assign(new Error('connect ECONNREFUSED 10.96.0.1:443'), { code: 'ECONNREFUSED' });
    const sessions = { listKeys: async () => Promise.reject(refused) };
    const logger = new MemoryLogger();
    const resync = new Resync({
      sessions: sessions as unknown as SessionStore,
      intervalMs: 60_000,
      enqueue: (key) => queue.add(key),
      known: () => [],
      logger,
    });
    const workload = new Workload({
      informers: [],
      queue,
      resync,
      startWatch: async () => ({ close: () => undefined }),
      logger,
    });
    try {
      await workload.start();
      expect(workload.isStarted).toBe(true);
      expect(logger.lines.filter((l) => l.level === 'warn')).toEqual([
        expect.objectContaining({
          message: 'first resync failed; the watch replay and the next resync cover it',
          fields: expect.objectContaining({ error: 'connect ECONNREFUSED 10.96.0.1:443' }),
        }),
      ]);
    } finally {
      await workload.stop(1000);
    }
  });
});
