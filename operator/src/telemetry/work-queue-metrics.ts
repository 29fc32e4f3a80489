/**
 * The work queue's metrics under the names client-go's workqueue exports for controller-runtime
 * (k8s.io/client-go/util/workqueue, registered by sigs.k8s.io/controller-runtime/pkg/metrics), with
 * the same label (`name`, the queue) and buckets: dashboards and alerts written for Go controllers
 * work on this operator unchanged.
 */
import * as prom from 'prom-client';

import type { QueueHooks } from '../state/work-queue.js';

/** The queue's name label: the kind it reconciles, lowercase (controller-runtime's convention). */
export const QUEUE_NAME = 'sandboxsession';

/** client-go's buckets of the queue and work durations: 10 ns to 1,000 s, x10 (exact decimals). */
const DURATION_BUCKETS = Array.from({ length: 12 }, (_, i) => Number(`1e${i - 8}`));

/** What the in-flight gauges read from the queue at scrape time. */
export interface InFlightSource {
  inFlightStartTimes(): Iterable<number>;
}

/** The instruments, and the hooks that feed them. */
export class WorkQueueMetrics {
  private readonly labels = { name: QUEUE_NAME };
  private readonly depth: prom.Gauge<'name'>;
  private readonly adds: prom.Counter<'name'>;
  private readonly retries: prom.Counter<'name'>;
  private readonly queueDuration: prom.Histogram<'name'>;
  private readonly workDuration: prom.Histogram<'name'>;
  private source: InFlightSource | undefined;

  constructor(registry: prom.Registry, now: () => number = Date.now) {
    const registers = [registry];
    const labelNames = ['name'] as const;
    this.depth = new prom.Gauge({
      name: 'workqueue_depth',
      help: 'Current depth of workqueue',
      labelNames,
      registers,
    });
    this.adds = new prom.Counter({
      name: 'workqueue_adds_total',
      help: 'Total number of adds handled by workqueue',
      labelNames,
      registers,
    });
    this.retries = new prom.Counter({
      name: 'workqueue_retries_total',
      help: 'Total number of retries handled by workqueue',
      labelNames,
      registers,
    });
    this.queueDuration = new prom.Histogram({
      name: 'workqueue_queue_duration_seconds',
      help: 'How long in seconds an item stays in workqueue before being requested',
      labelNames,
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.workDuration = new prom.Histogram({
      name: 'workqueue_work_duration_seconds',
      help: 'How long in seconds processing an item from workqueue takes.',
      labelNames,
      buckets: DURATION_BUCKETS,
      registers,
    });
    // Zero before the first add, as client-go's are: a rate() over a fresh process has a start.
    this.depth.set(this.labels, 0);
    this.adds.inc(this.labels, 0);
    this.retries.inc(this.labels, 0);
    this.queueDuration.zero(this.labels);
    this.workDuration.zero(this.labels);
    const ages = (): number[] =>
      [...(this.source?.inFlightStartTimes() ?? [])].map((t) => (now() - t) / 1000);
    const labels = this.labels;
    new prom.Gauge({
      name: 'workqueue_unfinished_work_seconds',
      help:
        "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. " +
        'Large values indicate stuck threads.',
      labelNames,
      registers,
      collect() {
        this.set(
          labels,
          ages().reduce((sum, age) => sum + age, 0),
        );
      },
    });
    new prom.Gauge({
      name: 'workqueue_longest_running_processor_seconds',
      help: 'How many seconds has the longest running processor for workqueue been running.',
      labelNames,
      registers,
      collect() {
        this.set(labels, Math.max(0, ...ages()));
      },
    });
  }

  /** The queue whose in-flight work the gauges report (set once the queue exists). */
  observe(source: InFlightSource): void {
    this.source = source;
  }

  /** Hooks for the queue: these metrics, then `also`'s hook of the same event (logs, other metrics). */
  hooks(also: QueueHooks = {}): QueueHooks {
    return {
      onAdd: (key) => {
        this.adds.inc(this.labels);
        also.onAdd?.(key);
      },
      onStart: (key, queuedMs) => {
        this.queueDuration.observe(this.labels, queuedMs / 1000);
        also.onStart?.(key, queuedMs);
      },
      onDone: (key, ms, ok) => {
        this.workDuration.observe(this.labels, ms / 1000);
        also.onDone?.(key, ms, ok);
      },
      onDepth: (depth) => {
        this.depth.set(this.labels, depth);
        also.onDepth?.(depth);
      },
      onError: (key, err, attempt, delayMs) => {
        this.retries.inc(this.labels);
        also.onError?.(key, err, attempt, delayMs);
      },
    };
  }
}
