/**
 * The audit chain's cheaper hashing gives exactly what the first implementation gave: the same
 * canonical JSON, the same HMAC, the same records (key order included), so chains written before
 * and after verify alike. The reference below is that first implementation, kept verbatim.
 */
import { describe, expect, it } from '@jest/globals';
import { createHmac } from 'node:crypto';

import { AUDIT_DETAIL_MAX_CHARS, type AuditEvent, type AuditRecord } from '@sandbox-platform/api';

import { canonicalJson, chainRecord, ChainHmac, recordHash, verifyChain } from '../../src/audit/chain.js';

function refCanonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(refCanonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${refCanonicalJson(v)}`).join(',')}}`;
}

function refRecordHash(key: Buffer, record: Omit<AuditRecord, 'hash'> & { hash?: string }): string {
  const { hash: _ignored, ...body } = record;
  return createHmac('sha256', key)
    .update(`${record.prev}\n${refCanonicalJson(body)}`)
    .digest('hex');
}

function refBoundEvent(event: AuditEvent): AuditEvent {
  const detail: AuditEvent['detail'] = {};
  for (const [k, v] of Object.entries(event.detail)) {
    detail[k] =
      typeof v === 'string' && v.length > AUDIT_DETAIL_MAX_CHARS
        ? `${v.slice(0, AUDIT_DETAIL_MAX_CHARS)}...[cut ${v.length - AUDIT_DETAIL_MAX_CHARS} chars]`
        : v;
  }
  return { ...event, detail };
}

function refChainRecord(key: Buffer, event: AuditEvent, head: { seq: number; hash: string }): AuditRecord {
  const body = { ...refBoundEvent(event), seq: head.seq + 1, prev: head.hash };
  return { ...body, hash: refRecordHash(key, body) };
}

/** A small deterministic PRNG (the cases are the same on every run). */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const ALPHABET = [
  'a',
  'Z',
  '0',
  ' ',
  '"',
  '\\',
  '\n',
  '\u0000',
  'é',
  '\u2028',
  '😀',
  '\ud800',
  '_',
  '10',
  'A',
];

describe('audit chain hashing', () => {
  const rand = prng(42);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const word = (max: number): string =>
    Array.from({ length: Math.floor(rand() * max) }, () => pick(ALPHABET)).join('');
  const value = (depth: number): unknown => {
    const r = rand();
    if (r < 0.2) return word(8);
    if (r < 0.3) return Math.floor(rand() * 1e6) - 5e5;
    if (r < 0.35) return rand() * 100;
    if (r < 0.4) return rand() < 0.5;
    if (r < 0.45) return null;
    if (r < 0.5) return undefined;
    if (depth > 2) return word(4);
    if (r < 0.7) return Array.from({ length: Math.floor(rand() * 4) }, () => value(depth + 1));
    return Object.fromEntries(
      Array.from({ length: Math.floor(rand() * 5) }, () => [word(5), value(depth + 1)]),
    );
  };

  it('canonical JSON is the same text as before for any JSON-like value', () => {
    const differ: unknown[] = [];
    for (let i = 0; i < 3000; i++) {
      const v = value(0);
      if (canonicalJson(v) !== refCanonicalJson(v)) differ.push(v);
    }
    expect(differ).toEqual([]);
    const odd = { b: [undefined, () => 1, 1], a: { '2': 1, '10': 2, B: 3, a: undefined }, d: new Date(0) };
    expect(canonicalJson(odd)).toBe(refCanonicalJson(odd));
  });

  it('ChainHmac is HMAC-SHA256 for keys shorter, equal to and longer than the block', () => {
    for (const len of [0, 1, 32, 63, 64, 65, 200]) {
      const key = Buffer.from(Array.from({ length: len }, (_, i) => (i * 37 + len) & 0xff));
      const h = new ChainHmac(key);
      for (const msg of ['', 'x', 'é😀\n', 'a'.repeat(5000)]) {
        expect(h.hex(msg)).toBe(createHmac('sha256', key).update(msg).digest('hex'));
        // The padded states are copied, never consumed: the same message twice, the same digest.
        expect(h.hex(msg)).toBe(createHmac('sha256', key).update(msg).digest('hex'));
      }
    }
  });

  it('chains records exactly as before: same hashes, same stored JSON, verifiable by either', () => {
    const key = Buffer.alloc(32, 9);
    let head = { seq: 0, hash: '0'.repeat(64) };
    let refHead = head;
    const records: AuditRecord[] = [];
    const differ: number[] = [];
    for (let i = 0; i < 500; i++) {
      const detail: AuditEvent['detail'] = {};
      for (let k = Math.floor(rand() * 8); k > 0; k--) {
        const r = rand();
        detail[word(6) || 'k'] =
          r < 0.3
            ? word(20)
            : r < 0.4
              ? 'x'.repeat(AUDIT_DETAIL_MAX_CHARS + 5)
              : r < 0.7
                ? i * k
                : r < 0.85
                  ? null
                  : true;
      }
      const event: AuditEvent = {
        time: new Date(1_700_000_000_000 + i).toISOString(),
        namespace: 'team-a',
        session: 's1',
        kind: 'egress',
        actor: 'sandbox',
        outcome: pick(['allowed', 'denied', 'error']),
        detail,
      };
      const r = chainRecord(key, event, head);
      const ref = refChainRecord(key, event, refHead);
      if (JSON.stringify(r) !== JSON.stringify(ref) || recordHash(key, r) !== refRecordHash(key, r))
        differ.push(i);
      records.push(r);
      head = { seq: r.seq, hash: r.hash };
      refHead = { seq: ref.seq, hash: ref.hash };
    }
    expect(differ).toEqual([]);
    expect(verifyChain(key, records, { seq: 0, hash: '0'.repeat(64) }, head).valid).toBe(true);
    const altered = records.map((r) => ({ ...r }));
    altered[250] = { ...altered[250]!, outcome: 'forged' };
    expect(verifyChain(key, altered, { seq: 0, hash: '0'.repeat(64) })).toMatchObject({
      valid: false,
      brokenAt: 251,
      reason: 'hash-mismatch',
    });
  });
});
