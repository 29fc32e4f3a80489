/**
 * The status write of a reconcile, shared by the driver (reconcile.ts: once, at the end) and the
 * claim phase (claim-phase.ts: as soon as a warm Pod's agent accepted the session's bind, while the
 * claim patch is still on its way; the driver's write then finds nothing changed). Written onto the
 * resourceVersion the status was computed from; the Events of the Ready transition and the
 * observer's readiness figures follow a write that went through.
 */
import type { SandboxSessionStatus } from '@sandbox-platform/api';

import { isConflict } from '../kube/errors.js';
import type { ControllerDeps, Scope } from './scope.js';
import { keyString } from './session-key.js';
import { readyCondition } from './status.js';
import { statusPatch } from './status-patch.js';
import { parseTime } from './time.js';
import { transitionEvents } from './transitions.js';

/** Writes the computed status if it `changed`; false when the write was refused (stale read). */
export async function writeStatus(
  scope: Scope,
  deps: ControllerDeps,
  computed: SandboxSessionStatus,
  changed: boolean,
): Promise<boolean> {
  const stored = scope.session.status;
  const base = scope.writtenStatus ?? stored;
  if (changed) {
    try {
      const result = await deps.sessions.patchStatus(
        scope.key,
        statusPatch(base, computed),
        scope.resourceVersion,
      );
      if (result === 'gone') return true;
      scope.resourceVersion = result.resourceVersion;
      deps.observer.statusWritten(readyCondition(computed)?.reason);
    } catch (err) {
      if (!isConflict(err)) throw new Error('write status', { cause: err });
      deps.logger.debug('status write refused: the session changed since it was read; reconciling again', {
        namespace: scope.ref.namespace,
        session: scope.ref.name,
      });
      return false;
    }
  }
  for (const event of transitionEvents(stored, computed)) deps.events.record(scope.session, event);
  observe(scope, deps, stored, computed);
  return true;
}

function observe(
  scope: Scope,
  deps: ControllerDeps,
  stored: SandboxSessionStatus | undefined,
  computed: SandboxSessionStatus,
): void {
  const ready = readyCondition(computed);
  deps.observer.readyReason(keyString(scope.key), ready?.reason, parseTime(ready?.lastTransitionTime));
  if (!stored?.readyTime && computed.readyTime) {
    const created = parseTime(scope.session.metadata.creationTimestamp);
    const readyAt = parseTime(computed.readyTime);
    if (created && readyAt)
      deps.observer.firstReady(Math.max(0, (readyAt.getTime() - created.getTime()) / 1000));
    deps.logger.info('session ready', {
      namespace: scope.ref.namespace,
      session: scope.ref.name,
      pod: computed.podName,
    });
  }
}
