/**
 * Status comparison and the merge patch that turns the stored status into the computed one.
 * A JSON merge patch replaces arrays whole (so conditions are always sent complete) and removes a
 * field only when it is set to null, so fields that disappeared are sent as null.
 */
import { isDeepStrictEqual } from 'node:util';

import type { SandboxSessionStatus } from '@sandbox-platform/api';

import type { StatusPatch } from '../kube/ports.js';

/** True when both statuses hold the same values (key order and absent-vs-undefined do not matter). */
export function statusEqual(
  stored: SandboxSessionStatus | undefined,
  computed: SandboxSessionStatus,
): boolean {
  return isDeepStrictEqual(defined(stored ?? {}), defined(computed));
}

/** The merge patch from `stored` to `computed`. */
export function statusPatch(
  stored: SandboxSessionStatus | undefined,
  computed: SandboxSessionStatus,
): StatusPatch {
  const patch: Record<string, unknown> = { ...defined(computed) };
  for (const key of Object.keys(stored ?? {})) {
    if (!(key in patch)) patch[key] = null;
  }
  return patch;
}

function defined(value: object): Record<string, unknown> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined));
}
