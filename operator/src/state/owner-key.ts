/**
 * Maps an owned Pod, Secret or claim back to the key of the session it concerns: the controller
 * ownerReference when it is a SandboxSession under a served apiVersion, else the
 * sandbox.dev/session label (which session names, being at most 63 characters, always fit
 * unhashed). A foreign object carrying our labels thus still wakes the session that reports the
 * NameConflict, and its deletion wakes it again.
 *
 * Waking is all this does (ADR 0027): the key is always in the child's own namespace (a reference
 * never reaches across namespaces), and the reconcile it queues judges the object by the exact
 * ownership test (controller/ownership.ts) before using it. An event about a foreign object may
 * wake a session; it never makes the session use that object.
 */
import { KIND, isPlatformRef } from '@sandbox-platform/api';

import { keyString } from '../controller/session-key.js';
import type { ChildMetadata } from './views.js';

/** The session key of a child, if it names one: always in the child's own namespace. */
export function ownerKey(meta: ChildMetadata): string | undefined {
  const ref = meta.controller;
  if (isPlatformRef(ref) && ref?.kind === KIND && ref.name) {
    return keyString({ namespace: meta.namespace, name: ref.name });
  }
  if (meta.sessionLabel) return keyString({ namespace: meta.namespace, name: meta.sessionLabel });
  return undefined;
}
