/**
 * Status comparison and the merge patch that turns the stored status into the computed one.
 * A JSON merge patch replaces arrays whole (so conditions are always sent complete) and removes a
 * field only when it is set to null, so fields that disappeared are sent as null.
 */
import type { SandboxSessionStatus } from '@sandbox-platform/api';

import type { StatusPatch } from '../kube/ports.js';

/**
 * True when both statuses hold the same values. Compared as canonical JSON (keys sorted, undefined
 * dropped): status is plain JSON, and this ignores key order and the objects' prototypes.
 */
export function statusEqual(
  stored: SandboxSessionStatus | undefined,
  computed: SandboxSessionStatus,
): boolean {
  return canonical(stored ?? {}) === canonical(computed);
}

/** The merge patch from `stored` to `computed`. */
export function statusPatch(
  stored: SandboxSessionStatus | undefined,
  computed: SandboxSessionStatus,
): StatusPatch {
  const patch: Record<string, unknown> = Object.fromEntries(
    Object.entries(computed).filter(([, v]) => v !== undefined),
  );
  for (const key of Object.keys(stored ?? {})) {
    if (!(key in patch)) patch[key] = null;
  }
  return patch;
}

function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}
