/**
 * The per-session hash chain of audit records. Pure: no I/O.
 *
 * Each record's hash is HMAC-SHA256(key, prev + "\n" + canonical JSON of the record without its
 * hash), where prev is the previous record's hash (AUDIT_GENESIS for the first, or the retention
 * anchor once older records were dropped). Changing, removing or reordering any stored record,
 * or its seq, breaks the chain at that record; without the key nobody can compute a new chain.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

import {
  AUDIT_DETAIL_MAX_CHARS,
  type AuditEvent,
  type AuditRecord,
  type AuditVerification,
} from '@sandbox-platform/api';

/** JSON with object keys sorted at every level: the same record always gives the same text. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

/** The chained HMAC of a record (its `hash` field is ignored). */
export function recordHash(key: Buffer, record: Omit<AuditRecord, 'hash'> & { hash?: string }): string {
  const { hash: _ignored, ...body } = record;
  return createHmac('sha256', key)
    .update(`${record.prev}\n${canonicalJson(body)}`)
    .digest('hex');
}

/** The next record of a chain whose head is (seq, hash). */
export function chainRecord(
  key: Buffer,
  event: AuditEvent,
  head: { seq: number; hash: string },
): AuditRecord {
  const body = { ...boundEvent(event), seq: head.seq + 1, prev: head.hash };
  return { ...body, hash: recordHash(key, body) };
}

/** The event with every detail string bounded (sandbox-supplied text is hostile input). */
export function boundEvent(event: AuditEvent): AuditEvent {
  const detail: AuditEvent['detail'] = {};
  for (const [k, v] of Object.entries(event.detail)) {
    detail[k] =
      typeof v === 'string' && v.length > AUDIT_DETAIL_MAX_CHARS
        ? `${v.slice(0, AUDIT_DETAIL_MAX_CHARS)}...[cut ${v.length - AUDIT_DETAIL_MAX_CHARS} chars]`
        : v;
  }
  return { ...event, detail };
}

const sameHex = (a: string, b: string): boolean =>
  a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

/** Why `r` does not follow `prev` in the chain, or undefined when it does. */
function brokenReason(
  key: Buffer,
  r: AuditRecord | undefined,
  prev: { seq: number; hash: string },
): string | undefined {
  if (r === undefined) return 'unparsable';
  if (r.seq !== prev.seq + 1) return 'seq-gap';
  if (typeof r.prev !== 'string' || !sameHex(r.prev, prev.hash)) return 'link-mismatch';
  if (typeof r.hash !== 'string' || !sameHex(r.hash, recordHash(key, r))) return 'hash-mismatch';
  return undefined;
}

/**
 * Checks a session's stored records (as parsed lines; `undefined` for a line that did not parse)
 * from the anchor (the genesis, or what retention left) to the head the service holds in memory.
 */
export function verifyChain(
  key: Buffer,
  records: ReadonlyArray<AuditRecord | undefined>,
  anchor: { seq: number; hash: string },
  head?: { seq: number },
): AuditVerification {
  let prev = anchor;
  const base = {
    records: records.length,
    firstSeq: records[0]?.seq ?? null,
    lastSeq: records.at(-1)?.seq ?? null,
  };
  for (const r of records) {
    const reason = brokenReason(key, r, prev);
    if (reason) return { ...base, valid: false, brokenAt: r?.seq ?? prev.seq + 1, reason };
    prev = { seq: r!.seq, hash: r!.hash };
  }
  if (head && head.seq > prev.seq) {
    return { ...base, valid: false, brokenAt: prev.seq + 1, reason: 'head-missing' };
  }
  return { ...base, valid: true };
}
