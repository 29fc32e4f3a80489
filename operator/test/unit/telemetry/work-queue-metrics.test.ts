/* eslint-disable @typescript-eslint/require-await -- in-memory handlers implement async ports synchronously */
/**
 * The workqueue_* metrics, fed by a real WorkQueue on a hand-moved clock: names, the `name`
 * label and client-go's semantics (an add counts once per queued key, queue time runs from that
 * add, retries count failures only, the in-flight gauges age at scrape time).
 */
import { describe, expect, it } from '@jest/globals';
import * as prom from 'prom-client';

import { WorkQueue, type HandlerResult } from '../../../src/state/work-queue.js';
import { QUEUE_NAME, WorkQueueMetrics } from '../../../src/telemetry/work-queue-metrics.js';

const BACKOFF = { baseMs: 100, maxMs: 1000, jitter: 0 };
const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

function gate(): { wait: Promise<void>; open: () => void } {
  let open = (): void => undefined;
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
}

/** A queue and its metrics on one clock the test moves. */
function setup(handler: (key: string) => Promise<HandlerResult>, concurrency = 1) {
  let t = 1_000_000;
  const now = (): number => t;
  const registry = new prom.Registry();
  const metrics = new WorkQueueMetrics(registry, now);
  const queue = new WorkQueue({ concurrency, handler, backoff: BACKOFF, now, hooks: metrics.hooks() });
  metrics.observe(queue);
  /** The value of one series, by metric name and (optional) extra labels. */
  const value = async (name: string, extra: Record<string, string> = {}): Promise<number | undefined> => {
    const all = await registry.getMetricsAsJSON();
    for (const m of all) {
      for (const v of (m as { values: prom.MetricValueWithName<string>[] }).values) {
        const metricName = v.metricName ?? m.name;
        const labelsMatch = Object.entries({ name: QUEUE_NAME, ...extra }).every(
          ([k, want]) => String(v.labels[k]) === want,
        );
        if (metricName === name && labelsMatch) return v.value;
      }
    }
    return undefined;
  };
  return { queue, registry, value, advance: (ms: number) => (t += ms) };
}

describe('workqueue metrics', () => {
  it('exports the seven client-go names with the name label, zero before any work', async () => {
    const { registry, value } = setup(async () => ({}));
    const names = (await registry.getMetricsAsJSON()).map((m) => m.name).sort();
    expect(names).toEqual([
      'workqueue_adds_total',
      'workqueue_depth',
      'workqueue_longest_running_processor_seconds',
      'workqueue_queue_duration_seconds',
      'workqueue_retries_total',
      'workqueue_unfinished_work_seconds',
      'workqueue_work_duration_seconds',
    ]);
    expect(await value('workqueue_depth')).toBe(0);
    expect(await value('workqueue_adds_total')).toBe(0);
    expect(await value('workqueue_retries_total')).toBe(0);
    expect(await value('workqueue_longest_running_processor_seconds')).toBe(0);
    const text = await registry.metrics();
    // client-go's buckets: 10 ns to 1,000 s.
    expect(text).toContain('workqueue_work_duration_seconds_bucket{le="1e-8",name="sandboxsession"}');
    expect(text).toContain('workqueue_work_duration_seconds_bucket{le="1000",name="sandboxsession"}');
  });

  it('counts an add once per queued key, and again for a key added while it runs', async () => {
    const g = gate();
    const { queue, value } = setup(async (key) => {
      if (key === 'a') await g.wait;
      return {};
    });
    queue.add('a'); // runs at once
    queue.add('b');
    queue.add('b'); // already waiting: not an add
    queue.add('a'); // running: marked to run again, an add
    queue.add('a'); // already marked: not an add
    expect(await value('workqueue_adds_total')).toBe(3);
    expect(await value('workqueue_depth')).toBe(1);
    g.open();
    await flush();
    await flush();
    await flush();
    expect(await value('workqueue_adds_total')).toBe(3);
    expect(await value('workqueue_depth')).toBe(0);
    await queue.shutdown(1000);
  });

  it('observes the time a key waited and the time it took, on the queue clock', async () => {
    const g = gate();
    const clock: { advance?: (ms: number) => number } = {};
    const { queue, value, advance } = setup(async (key) => {
      if (key === 'slow') {
        await g.wait;
        clock.advance?.(2_000);
      }
      return {};
    });
    clock.advance = advance;
    queue.add('slow');
    queue.add('waiting');
    advance(3_000);
    // In flight for 3 s: the gauges read the age at scrape time.
    expect(await value('workqueue_longest_running_processor_seconds')).toBe(3);
    expect(await value('workqueue_unfinished_work_seconds')).toBe(3);
    g.open();
    await flush();
    await flush();
    // slow: queued 0 s, worked 5 s; waiting: queued 5 s, worked 0 s.
    expect(await value('workqueue_queue_duration_seconds_sum')).toBe(5);
    expect(await value('workqueue_queue_duration_seconds_count')).toBe(2);
    expect(await value('workqueue_work_duration_seconds_sum')).toBe(5);
    expect(await value('workqueue_longest_running_processor_seconds')).toBe(0);
    await queue.shutdown(1000);
  });

  it('counts failures as retries, not successful requeues', async () => {
    let fail = true;
    const { queue, value } = setup(async () => {
      if (fail) {
        fail = false;
        throw new Error('boom');
      }
      return { requeueAfterMs: 60_000 };
    });
    queue.add('a');
    await flush();
    expect(await value('workqueue_retries_total')).toBe(1);
    await queue.shutdown(1000);
  });

  it('calls the hooks it wraps after its own', async () => {
    const registry = new prom.Registry();
    const metrics = new WorkQueueMetrics(registry);
    const seen: string[] = [];
    const hooks = metrics.hooks({
      onAdd: (k) => seen.push(`add ${k}`),
      onStart: (k) => seen.push(`start ${k}`),
      onDone: (k, _ms, ok) => seen.push(`done ${k} ${String(ok)}`),
      onDepth: (d) => seen.push(`depth ${d}`),
      onError: (k, _e, attempt) => seen.push(`error ${k} ${attempt}`),
    });
    hooks.onAdd?.('k');
    hooks.onStart?.('k', 1);
    hooks.onDone?.('k', 1, false);
    hooks.onDepth?.(4);
    hooks.onError?.('k', new Error('x'), 2, 10);
    expect(seen).toEqual(['add k', 'start k', 'done k false', 'depth 4', 'error k 2']);
  });
});
