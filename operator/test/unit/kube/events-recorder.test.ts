import { describe, expect, it, jest } from '@jest/globals';
import type * as k8s from '@kubernetes/client-node';

import { QueuedEventRecorder, buildEvent } from '../../../src/kube/events-recorder.js';
import { MemoryLogger } from '../../fakes/fakes.js';
import { session } from '../../fixtures/sessions.js';

const EVENT = {
  type: 'Normal' as const,
  reason: 'CreatedPod',
  action: 'Create',
  note: 'Created Pod sbs-demo',
};

/** An Events API whose writes the test completes by hand. */
class SlowApi {
  readonly bodies: k8s.EventsV1Event[] = [];
  inFlight = 0;
  maxInFlight = 0;
  private waiting: Array<() => void> = [];
  fail = false;
  createNamespacedEvent(req: { namespace: string; body: k8s.EventsV1Event }): Promise<k8s.EventsV1Event> {
    this.bodies.push(req.body);
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    return new Promise((resolve, reject) =>
      this.waiting.push(() => {
        this.inFlight--;
        if (this.fail) reject(new Error('forbidden'));
        else resolve(req.body);
      }),
    );
  }
  release(): void {
    const w = this.waiting;
    this.waiting = [];
    w.forEach((f) => f());
  }
}

describe('buildEvent', () => {
  it('is an events.k8s.io/v1 Event regarding the session, with a MicroTime', () => {
    const e = buildEvent(session(), EVENT, 'op-0', new Date('2030-01-01T00:00:00.123Z'));
    expect(e).toMatchObject({
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      reportingController: 'sandbox.dev/sandbox-operator',
      reportingInstance: 'op-0',
      action: 'Create',
      reason: 'CreatedPod',
      note: 'Created Pod sbs-demo',
      type: 'Normal',
      regarding: {
        apiVersion: 'sandbox.dev/v1alpha1',
        kind: 'SandboxSession',
        name: 'demo',
        namespace: 'team-a',
        uid: 'uid-1',
      },
    });
    expect(e.metadata?.name).toMatch(/^demo\.[0-9a-f]+$/);
    expect(JSON.stringify(e.eventTime)).toBe('"2030-01-01T00:00:00.123000Z"');
  });
});

describe('QueuedEventRecorder', () => {
  it('sends in the background with bounded concurrency, and flush waits for the rest', async () => {
    const api = new SlowApi();
    const rec = new QueuedEventRecorder(api, { instance: 'op', logger: new MemoryLogger(), maxInFlight: 2 });
    for (let i = 0; i < 5; i++) rec.record(session(), EVENT);
    expect(api.inFlight).toBe(2);
    expect(rec.pending).toBe(5);
    const flushed = rec.flush(1000);
    for (let i = 0; i < 5; i++) {
      api.release();
      await new Promise((r) => setImmediate(r));
    }
    expect(await flushed).toBe(true);
    expect(api.bodies).toHaveLength(5);
    expect(api.maxInFlight).toBe(2);
  });

  it('drops events beyond the queue bound, and logs failures without throwing', async () => {
    const api = new SlowApi();
    const logger = new MemoryLogger();
    const outcomes: string[] = [];
    const rec = new QueuedEventRecorder(api, {
      instance: 'op',
      logger,
      maxInFlight: 1,
      maxQueued: 2,
      outcome: (r) => outcomes.push(r),
    });
    api.fail = true;
    for (let i = 0; i < 6; i++) rec.record(session(), EVENT);
    expect(rec.pending).toBe(3);
    expect(logger.lines.filter((l) => l.message === 'event queue full; dropping events')).toHaveLength(1);
    for (let i = 0; i < 3; i++) {
      api.release();
      await new Promise((r) => setImmediate(r));
    }
    expect(await rec.flush(100)).toBe(true);
    expect(logger.lines.filter((l) => l.message === 'could not record event')).toHaveLength(3);
    // What became of each of the 6 (metrics: sandbox_operator_events_total).
    expect(outcomes.sort()).toEqual(['dropped', 'dropped', 'dropped', 'failed', 'failed', 'failed']);
  });

  it('a full queue drops its oldest Normal Event for a Warning, and a Warning when it holds no Normal one', async () => {
    const api = new SlowApi();
    const outcomes: string[] = [];
    const rec = new QueuedEventRecorder(api, {
      instance: 'op',
      logger: new MemoryLogger(),
      maxInFlight: 1,
      maxQueued: 2,
      outcome: (r) => outcomes.push(r),
    });
    const warning = (reason: string) => ({ ...EVENT, type: 'Warning' as const, reason });
    rec.record(session(), { ...EVENT, reason: 'InFlight' }); // sent at once (in flight)
    rec.record(session(), { ...EVENT, reason: 'Old' });
    rec.record(session(), { ...EVENT, reason: 'New' });
    rec.record(session(), warning('QuotaExceeded')); // takes Old's place
    rec.record(session(), warning('PodFailed')); // takes New's place
    rec.record(session(), warning('Unschedulable')); // no Normal left: dropped
    rec.record(session(), { ...EVENT, reason: 'Later' }); // full: dropped
    expect(outcomes).toEqual(['dropped', 'dropped', 'dropped', 'dropped']);
    for (let i = 0; i < 3; i++) {
      api.release();
      await new Promise((r) => setImmediate(r));
    }
    expect(await rec.flush(100)).toBe(true);
    expect(api.bodies.map((b) => b.reason)).toEqual(['InFlight', 'QuotaExceeded', 'PodFailed']);
  });

  it('holds Events while reconciles wait, at most maxHoldMs; flush sends them at once', () => {
    jest.useFakeTimers();
    try {
      const api = new SlowApi();
      let busy = true;
      let now = 0;
      const rec = new QueuedEventRecorder(api, {
        instance: 'op',
        logger: new MemoryLogger(),
        maxInFlight: 10,
        held: () => busy,
        maxHoldMs: 1000,
        now: () => now,
      });
      rec.record(session(), EVENT);
      jest.advanceTimersByTime(500);
      expect(api.bodies).toHaveLength(0);
      busy = false;
      jest.advanceTimersByTime(100);
      expect(api.bodies).toHaveLength(1);

      busy = true;
      now = 2000;
      rec.record(session(), EVENT);
      jest.advanceTimersByTime(300);
      expect(api.bodies).toHaveLength(1);
      now = 3000;
      jest.advanceTimersByTime(100);
      expect(api.bodies).toHaveLength(2);

      rec.record(session(), EVENT);
      expect(api.bodies).toHaveLength(2);
      void rec.flush(1000);
      expect(api.bodies).toHaveLength(3);
    } finally {
      jest.useRealTimers();
    }
  });
});
