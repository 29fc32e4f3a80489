/**
 * Records Kubernetes Events through events.k8s.io/v1 (the current Events API; `kubectl describe`
 * and `kubectl events` show them like core/v1 Events, which share its storage). One Event per
 * transition; the operator only records on transitions, so there is no aggregation to do.
 * Writes are fire-and-forget: a failure is logged (at warn) and never fails a reconcile.
 */
import { randomBytes } from 'node:crypto';

import * as k8s from '@kubernetes/client-node';
import { API_VERSION, KIND, type SandboxSession } from '@sandbox-platform/api';

import type { Logger } from '../telemetry/log-port.js';
import { errorFields } from '../telemetry/logger.js';
import type { EventRecorder, SessionEvent } from './ports.js';

/** reportingController of our Events. */
export const REPORTING_CONTROLLER = 'sandbox.dev/sandbox-operator';

/** An EventRecorder writing events.k8s.io/v1 Events. `instance` is this replica's identity. */
export function createEventRecorder(api: k8s.EventsV1Api, instance: string, logger: Logger): EventRecorder {
  return {
    record(session: SandboxSession, event: SessionEvent): void {
      const body = buildEvent(session, event, instance, new Date());
      const namespace = session.metadata.namespace ?? '';
      api.createNamespacedEvent({ namespace, body }).catch((err: unknown) => {
        logger.warn('could not record event', {
          namespace,
          session: session.metadata.name,
          reason: event.reason,
          ...errorFields(err),
        });
      });
    },
  };
}

/** The Event object (pure apart from the random name suffix). */
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
    // <object>.<unique suffix>, as client-go names Events.
    metadata: { name: `${name}.${now.getTime().toString(16)}${randomBytes(3).toString('hex')}`, namespace },
    eventTime: new k8s.V1MicroTime(now.getTime()),
    reportingController: REPORTING_CONTROLLER,
    reportingInstance: instance.slice(0, 128),
    action: event.action,
    reason: event.reason,
    note: event.note.slice(0, 1024),
    type: event.type,
    regarding: { apiVersion: API_VERSION, kind: KIND, name, namespace, uid, resourceVersion },
  };
}
