/**
 * Events for Ready transitions: a pure function of the stored and the computed status, applied
 * after the status write succeeded (so a failed write followed by a retry does not record twice).
 */
import {
  EVENT_REASONS,
  REASONS,
  type SandboxSessionCondition,
  type SandboxSessionStatus,
} from '@sandbox-platform/api';

import type { SessionEvent } from '../kube/ports.js';
import { readyCondition } from './status.js';
import { isSuspendReason } from './suspension.js';

const WARNING_REASONS = new Set<string>([
  REASONS.nameConflict,
  REASONS.reconcileError,
  REASONS.quotaExceeded,
  REASONS.podFailed,
  REASONS.imagePullFailed,
  REASONS.unschedulable,
  REASONS.storageClassNotFound,
  REASONS.workspaceNotBound,
  REASONS.secretNotFound,
  REASONS.secretValueInvalid,
]);
const COLLECTED_REASONS = new Set<string>([REASONS.idleTimeout, REASONS.lifetimeExceeded]);

/**
 * The Events for the change of the Ready condition from `before` to `after`: one, or two when a
 * suspended session resumes (Resumed, then what Ready became, e.g. a Warning).
 */
export function transitionEvents(
  before: SandboxSessionStatus | undefined,
  after: SandboxSessionStatus,
): SessionEvent[] {
  const was = readyCondition(before);
  const now = readyCondition(after);
  if (!now || (was?.status === now.status && was.reason === now.reason)) return [];
  // One Suspended Event per suspension: on entering Suspending (the Pod still there) or Suspended.
  if (isSuspendReason(now.reason)) {
    if (isSuspendReason(was?.reason)) return [];
    return [{ type: 'Normal', reason: EVENT_REASONS.suspended, action: 'Suspend', note: now.message }];
  }
  if (isSuspendReason(was?.reason)) {
    const resumed: SessionEvent = {
      type: 'Normal',
      reason: EVENT_REASONS.resumed,
      action: 'Resume',
      note: `Resumed (spec.suspend is false); creating ${after.podName ? `Pod ${after.podName}` : 'the Pod'}`,
    };
    return [resumed, ...readyEvents(was, now, after)];
  }
  return readyEvents(was, now, after);
}

function readyEvents(
  was: SandboxSessionCondition | undefined,
  now: SandboxSessionCondition,
  after: SandboxSessionStatus,
): SessionEvent[] {
  if (now.status === 'True') {
    const where = [after.nodeName && `on node ${after.nodeName}`, after.podIP && `with IP ${after.podIP}`];
    const note = ['Pod', after.podName, 'is ready', ...where].filter(Boolean).join(' ');
    return [{ type: 'Normal', reason: EVENT_REASONS.ready, action: 'Observe', note }];
  }
  if (COLLECTED_REASONS.has(now.reason)) {
    return [{ type: 'Normal', reason: now.reason, action: 'Collect', note: now.message }];
  }
  if (was?.status === 'True') {
    return [
      {
        type: 'Warning',
        reason: EVENT_REASONS.notReady,
        action: 'Observe',
        note: `${now.reason}: ${now.message}`,
      },
    ];
  }
  if (WARNING_REASONS.has(now.reason)) {
    return [{ type: 'Warning', reason: now.reason, action: 'Reconcile', note: now.message }];
  }
  return [];
}
