/**
 * Reads a Pod's state as a Ready verdict with a stable reason. Pure.
 * Order matters: a terminal or deleting Pod is reported as such before anything else; image pull
 * failures before crash loops (a pull failure is the cause, the crash loop can't happen yet).
 */
import { REASONS, type ReadyReason } from '@sandbox-platform/api';

import type { PodConditionView, PodView } from '../state/views.js';

/** The Pod's contribution to the Ready condition. */
export interface PodReadiness {
  readonly ready: boolean;
  readonly reason: ReadyReason;
  readonly message: string;
}

const IMAGE_PULL_FAILURES = new Set([
  'ErrImagePull',
  'ImagePullBackOff',
  'ErrImageNeverPull',
  'InvalidImageName',
]);
const CONTAINER_FAILURES = new Set([
  'CrashLoopBackOff',
  'CreateContainerConfigError',
  'CreateContainerError',
  'RunContainerError',
]);
const MAX_MESSAGE = 1024;

/** Finds a Pod condition by type. */
export function podCondition(pod: PodView, type: string): PodConditionView | undefined {
  return pod.conditions.find((c) => c.type === type);
}

/** True when a Pod ended and the kubelet will not restart it. */
export function isTerminal(pod: PodView): boolean {
  return pod.phase === 'Failed' || pod.phase === 'Succeeded';
}

/** Ready only when Running, PodReady=True, and the Pod has an IP. */
export function isPodReady(pod: PodView): boolean {
  return (
    !pod.metadata.deletionTimestamp &&
    pod.phase === 'Running' &&
    podCondition(pod, 'Ready')?.status === 'True' &&
    Boolean(pod.podIP)
  );
}

/** The Ready verdict of a Pod. */
export function podReadiness(pod: PodView): PodReadiness {
  const name = pod.metadata.name;
  if (pod.metadata.deletionTimestamp) {
    return notReady(REASONS.podPending, `Pod ${name} is being deleted; it will be created again`);
  }
  if (isTerminal(pod)) {
    const why = [pod.reason, pod.message].filter(Boolean).join(': ');
    return notReady(
      REASONS.podFailed,
      `Pod ${name} ended in phase ${pod.phase}${why ? ` (${why})` : ''}; it is created again`,
    );
  }
  const scheduled = podCondition(pod, 'PodScheduled');
  if (scheduled?.status === 'False' && scheduled.reason === 'Unschedulable') {
    return notReady(REASONS.unschedulable, scheduled.message ?? 'The scheduler cannot place the Pod');
  }
  const failing = containerFailure(pod);
  if (failing) return failing;
  if (isPodReady(pod)) return { ready: true, reason: REASONS.ready, message: `Pod ${name} is ready` };
  return notReady(REASONS.podPending, pendingMessage(pod));
}

function containerFailure(pod: PodView): PodReadiness | undefined {
  for (const c of pod.containers) {
    const reason = c.waitingReason;
    if (!reason) continue;
    const detail = `container ${c.name}: ${reason}${c.waitingMessage ? `: ${c.waitingMessage}` : ''}`;
    if (IMAGE_PULL_FAILURES.has(reason)) return notReady(REASONS.imagePullFailed, detail);
    if (CONTAINER_FAILURES.has(reason)) return notReady(REASONS.podFailed, detail);
  }
  return undefined;
}

function pendingMessage(pod: PodView): string {
  const name = pod.metadata.name;
  if (podCondition(pod, 'PodScheduled')?.status !== 'True') return `Pod ${name} is waiting to be scheduled`;
  if (pod.phase === 'Running') return `Pod ${name} is running; waiting for it to become ready`;
  return `Pod ${name} is ${pod.phase ?? 'Pending'}`;
}

function notReady(reason: ReadyReason, message: string): PodReadiness {
  return {
    ready: false,
    reason,
    message: message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE)}...` : message,
  };
}
