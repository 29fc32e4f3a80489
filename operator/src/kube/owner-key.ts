/**
 * Maps an owned Pod or Secret back to the key of its session: the controller ownerReference when
 * it is a SandboxSession, else the sandbox.dev/session label (which session names, being at most
 * 63 characters, always fit unhashed). A foreign object carrying our labels thus still wakes the
 * session that reports the NameConflict, and its deletion wakes it again.
 */
import { KIND } from '@sandbox-platform/api';

import { keyString } from '../controller/session-key.js';
import type { ChildMetadata } from './views.js';

/** The session key of a child, if it names one. */
export function ownerKey(meta: ChildMetadata): string | undefined {
  if (meta.controller?.kind === KIND && meta.controller.name) {
    return keyString({ namespace: meta.namespace, name: meta.controller.name });
  }
  if (meta.sessionLabel) return keyString({ namespace: meta.namespace, name: meta.sessionLabel });
  return undefined;
}
