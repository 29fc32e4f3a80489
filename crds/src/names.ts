/**
 * Deterministic child names. A session's Pod is `sbs-<name>`, its Secret `sbs-<name>-token` and its
 * workspace claim (persistent workspaces only) `sbs-<name>-workspace`.
 * Session names are DNS-1123 labels of at most 63 characters (the CRD enforces it), so the Secret
 * name always fits; the Pod name is also its hostname, which must stay within 63 characters: when
 * `sbs-<name>` would not, it becomes `sbs-<first 50 chars>-<8 hex of sha256(name)>`, never a
 * silent truncation that two names could share.
 */
import { createHash } from 'node:crypto';

const MAX_LABEL = 63;
const PREFIX = 'sbs-';

/** First 8 hex characters of the SHA-256 of a string. */
export function shortHash(value: string): string {
  return createHash('sha256').update(value).digest('hex').slice(0, 8);
}

/** Name of the sandbox Pod of a session. */
export function podName(session: string): string {
  const plain = PREFIX + session;
  if (plain.length <= MAX_LABEL) return plain;
  const head = session.slice(0, MAX_LABEL - PREFIX.length - 9).replace(/-+$/, '');
  return `${PREFIX}${head}-${shortHash(session)}`;
}

/** Name of the token Secret of a session. */
export function secretName(session: string): string {
  return `${PREFIX}${session}-token`;
}

/**
 * Name of the workspace PersistentVolumeClaim of a session (spec.workspace.persistentVolumeClaim).
 * Claim names are DNS subdomains (253 characters), so `sbs-<63>-workspace` always fits.
 */
export function workspaceClaimName(session: string): string {
  return `${PREFIX}${session}-workspace`;
}

/** Value of the sandbox.dev/session label: the name when it is a valid label value, else a hash. */
export function sessionLabelValue(session: string): string {
  return session.length <= MAX_LABEL ? session : `h-${shortHash(session)}`;
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** True when the string is a DNS-1123 label (what session names and namespaces must be). */
export function isDnsLabel(value: string): boolean {
  return DNS_LABEL.test(value);
}
