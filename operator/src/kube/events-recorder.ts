/**
 * Records Kubernetes Events through events.k8s.io/v1 (the current Events API; `kubectl describe`
 * and `kubectl events` show them like core/v1 Events, which share its storage). One Event per
 * transition; the operator only records on transitions, so there is no aggregation to do.
 *
 * Events are best-effort, as in client-go: record() only queues, and a background sender writes
 * them with little concurrency. In a burst (hundreds of sessions created at once) the Event
 * writes wait while reconciles are queued (`held`), for at most `maxHoldMs`, so that they trail
 * the Secret, Pod and status writes instead of competing with them for the API server; the queue
 * is bounded and a full queue drops Events (counted, logged at warn): a Warning takes the place of
 * the oldest queued Normal Event, so what went wrong survives a burst that fills the queue (at
 * 10,000 sessions 1.38 of 2 Events per session were dropped). A failed write is logged and never
 * fails or delays a reconcile. On shutdown, flush() sends what is left at once.
 */
import { randomBytes } from 'node:crypto';

import * as k8s from '@kubernetes/client-node';
import { API_VERSION, KIND, type SandboxSession } from '@sandbox-platform/api';

import type { Logger } from '../telemetry/log-port.js';
import { errorFields } from '../telemetry/logger.js';
import type { EventRecorder, SessionEvent } from './ports.js';

/** reportingController of our Events. */
export const REPORTING_CONTROLLER = 'sandbox.dev/sandbox-operator';

/** Sender parameters. */
export interface EventSenderOptions {
  /** This replica's identity (reportingInstance). */
  readonly instance: string;
  readonly logger: Logger;
  /** Event writes in flight at most (default 2). */
  readonly maxInFlight?: number;
  /** Events queued at most; more are dropped (default 1000). */
  readonly maxQueued?: number;
  /** While true (e.g. reconciles are waiting), queued Events are not sent yet. */
  readonly held?: () => boolean;
  /** Longest an Event waits for `held` to clear (default 5000 ms). */
  readonly maxHoldMs?: number;
  readonly now?: () => number;
  /** Told what became of each Event (metrics: sandbox_operator_events_total). */
  readonly outcome?: (result: EventOutcome) => void;
}

/** What became of an Event: written, refused by the API server, or dropped from a full queue. */
export type EventOutcome = 'sent' | 'failed' | 'dropped';

/** How often a held sender looks again. */
const HOLD_POLL_MS = 100;

interface Queued {
  readonly body: k8s.EventsV1Event;
  readonly at: number;
}

/** An EventRecorder that queues and sends events.k8s.io/v1 Events in the background. */
export class QueuedEventRecorder implements EventRecorder {
  private readonly queue: Queued[] = [];
  private inFlight = 0;
  private dropped = 0;
  private idle: Array<() => void> = [];
  private flushing = false;
  private holdTimer?: NodeJS.Timeout;

  constructor(
    private readonly api: Pick<k8s.EventsV1Api, 'createNamespacedEvent'>,
    private readonly opts: EventSenderOptions,
  ) {}

  /** Queues an Event about the session. */
  record(session: SandboxSession, event: SessionEvent): void {
    if (this.queue.length >= (this.opts.maxQueued ?? 1000) && !this.makeRoomFor(event)) {
      this.opts.outcome?.('dropped');
      if (this.dropped++ % 100 === 0) {
        this.opts.logger.warn('event queue full; dropping events', {
          dropped: this.dropped,
          reason: event.reason,
        });
      }
      return;
    }
    const now = this.now();
    this.queue.push({ body: buildEvent(session, event, this.opts.instance, new Date(now)), at: now });
    this.pump();
  }

  /** A full queue drops its oldest Normal Event for a Warning; false when there is none. */
  private makeRoomFor(event: SessionEvent): boolean {
    if (event.type !== 'Warning') return false;
    const normal = this.queue.findIndex((q) => q.body.type !== 'Warning');
    if (normal < 0) return false;
    this.queue.splice(normal, 1);
    this.dropped++;
    this.opts.outcome?.('dropped');
    return true;
  }

  /** Events waiting or being sent. */
  get pending(): number {
    return this.queue.length + this.inFlight;
  }

  /** Resolves when every queued Event was sent (or failed), or after `timeoutMs`. */
  async flush(timeoutMs: number): Promise<boolean> {
    this.flushing = true;
    this.pump();
    if (this.pending === 0) return true;
    let timer: NodeJS.Timeout | undefined;
    const done = new Promise<boolean>((resolve) => this.idle.push(() => resolve(true)));
    const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
    try {
      return await Promise.race([done, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  private pump(): void {
    while (this.inFlight < (this.opts.maxInFlight ?? 2) && this.queue.length > 0) {
      if (this.holding(this.queue[0]!)) return this.pollLater();
      const { body } = this.queue.shift()!;
      this.inFlight++;
      void this.send(body);
    }
  }

  private holding(oldest: Queued): boolean {
    if (this.flushing || !this.opts.held?.()) return false;
    return this.now() - oldest.at < (this.opts.maxHoldMs ?? 5000);
  }

  private pollLater(): void {
    if (this.holdTimer) return;
    this.holdTimer = setTimeout(() => {
      this.holdTimer = undefined;
      this.pump();
    }, HOLD_POLL_MS);
    this.holdTimer.unref();
  }

  private now(): number {
    return (this.opts.now ?? Date.now)();
  }

  private async send(body: k8s.EventsV1Event): Promise<void> {
    const namespace = body.metadata?.namespace ?? '';
    try {
      await this.api.createNamespacedEvent({ namespace, body });
      this.opts.outcome?.('sent');
    } catch (err) {
      this.opts.outcome?.('failed');
      this.opts.logger.warn('could not record event', {
        namespace,
        session: body.regarding?.name,
        reason: body.reason,
        ...errorFields(err),
      });
    } finally {
      this.inFlight--;
      this.pump();
      if (this.pending === 0) {
        const waiters = this.idle;
        this.idle = [];
        for (const wake of waiters) wake();
      }
    }
  }
}

/** Random per process: Event names stay unique across operator replicas and restarts. */
const PROCESS_TAG = randomBytes(3).toString('hex');
let sequence = 0;

/** The Event object (pure apart from the unique name suffix). */
export function buildEvent(
  session: SandboxSession,
  event: SessionEvent,
  instance: string,
  now: Date,
): k8s.EventsV1Event {
  const { name = '', namespace = '', uid, resourceVersion } = session.metadata;
  return {
    apiVersion: 'events.k8s.io/v1',
    kind: 'Event',
    // <object>.<unique suffix>, as client-go names Events: the time, this process's random tag
    // and a counter (unique without a random draw per Event).
    metadata: {
      name: `${name}.${now.getTime().toString(16)}${PROCESS_TAG}${(sequence++).toString(16)}`,
      namespace,
    },
    eventTime: new k8s.V1MicroTime(now.getTime()),
    reportingController: REPORTING_CONTROLLER,
    reportingInstance: instance.slice(0, 128),
    action: event.action,
    reason: event.reason,
    note: event.note.slice(0, 1024),
    type: event.type,
    // The object's own kind when it has one (a SandboxSnapshot's Events: snapshot/snapshot-reconcile.ts).
    regarding: { apiVersion: API_VERSION, kind: session.kind ?? KIND, name, namespace, uid, resourceVersion },
  };
}
