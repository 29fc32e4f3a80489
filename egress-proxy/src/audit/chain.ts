/**
 * The per-session hash chain of audit records. Pure: no I/O.
 *
 * Each record's hash is HMAC-SHA256(key, prev + "\n" + canonical JSON of the record without its
 * hash), where prev is the previous record's hash (AUDIT_GENESIS for the first, or the retention
 * anchor once older records were dropped). Changing, removing or reordering any stored record,
 * or its seq, breaks the chain at that record; without the key nobody can compute a new chain.
 */
import { createHash, timingSafeEqual, type Hash } from 'node:crypto';

import {
  AUDIT_DETAIL_MAX_CHARS,
  type AuditEvent,
  type AuditRecord,
  type AuditVerification,
} from '@sandbox-platform/api';

/** JSON with object keys sorted at every level: the same record always gives the same text. */
export function canonicalJson(value: unknown): string {
  return canonical(value, undefined);
}

/**
 * canonicalJson, leaving out the top-level key `skip` (a record's `hash`). Keys are sorted by
 * UTF-16 code units (Array.prototype.sort's default, the same order as `<`); undefined values are
 * left out like JSON.stringify does.
 */
function canonical(value: unknown, skip: string | undefined): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) {
    let out = '[';
    // An element JSON has no text for (undefined, a function) joins as '' (Array.prototype.join).
    for (let i = 0; i < value.length; i++)
      out += (i > 0 ? ',' : '') + ((canonical(value[i], undefined) as string | undefined) ?? '');
    return `${out}]`;
  }
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj).sort();
  let out = '{';
  for (const k of keys) {
    const v = obj[k];
    if (v === undefined || k === skip) continue;
    out += `${out.length > 1 ? ',' : ''}${JSON.stringify(k)}:${canonical(v, undefined)}`;
  }
  return `${out}}`;
}

/**
 * HMAC-SHA256 with one key, its padded inner and outer blocks hashed once (RFC 2104): each
 * message then costs two copies of a hash state instead of a new HMAC and its key schedule.
 * The same digest as createHmac('sha256', key).
 */
export class ChainHmac {
  private readonly inner: Hash;
  private readonly outer: Hash;

  constructor(key: Buffer) {
    const block = Buffer.alloc(64);
    (key.length > 64 ? createHash('sha256').update(key).digest() : key).copy(block);
    this.inner = createHash('sha256').update(block.map((b) => b ^ 0x36));
    this.outer = createHash('sha256').update(block.map((b) => b ^ 0x5c));
  }

  hex(message: string): string {
    const inner = this.inner.copy().update(message).digest();
    return this.outer.copy().update(inner).digest('hex');
  }
}

const hmacs = new WeakMap<Buffer, ChainHmac>();
/** The ChainHmac of a key (one per key Buffer). */
function hmacOf(key: Buffer): ChainHmac {
  let h = hmacs.get(key);
  if (!h) {
    h = new ChainHmac(key);
    hmacs.set(key, h);
  }
  return h;
}

/** The chained HMAC of a record (its `hash` field is ignored). */
export function recordHash(key: Buffer, record: Omit<AuditRecord, 'hash'> & { hash?: string }): string {
  return hmacOf(key).hex(`${record.prev}\n${canonical(record, 'hash')}`);
}

/** The next record of a chain whose head is (seq, hash). */
export function chainRecord(
  key: Buffer,
  event: AuditEvent,
  head: { seq: number; hash: string },
): AuditRecord {
  // Built once, in the stored key order (the event's keys, seq, prev, hash); hash set last.
  const record: AuditRecord = { ...boundEvent(event), seq: head.seq + 1, prev: head.hash, hash: '' };
  record.hash = recordHash(key, record);
  return record;
}

/** The event with every detail string bounded (sandbox-supplied text is hostile input). */
export function boundEvent(event: AuditEvent): AuditEvent {
  const detail: AuditEvent['detail'] = {};
  const source = event.detail;
  for (const k of Object.keys(source)) {
    const v = source[k]!;
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
