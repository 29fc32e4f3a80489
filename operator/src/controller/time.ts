/**
 * Time values as the API carries them. Kubernetes writes times as RFC 3339 with second precision
 * (metav1.Time); the gateway's activity annotation is RFC 3339 as well, possibly with fractions.
 */

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/i;

/**
 * Parses an RFC 3339 string (or passes a Date through). Anything else, including an unparsable
 * activity annotation, is `undefined`: a malformed annotation must not make a session immortal
 * nor collect it early, so it is ignored and the next fallback (ready time, creation) applies.
 */
export function parseTime(value: unknown): Date | undefined {
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? undefined : value;
  if (typeof value !== 'string' || !RFC3339.test(value)) return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : new Date(ms);
}

/** Formats a time the way metav1.Time does: UTC, second precision, `Z` suffix. */
export function formatTime(value: Date): string {
  return value.toISOString().replace(/\.\d{3}Z$/, 'Z');
}
