/**
 * The DNS wire format, as far as the sandbox resolver needs it (RFC 1035): a query with one
 * question is parsed, and an answer to it is built with A/AAAA records or an error code. Pure, no
 * I/O, table-tested. Everything here comes from a sandbox: lengths are checked before every read,
 * a compression pointer in a query's question is refused (a query has nothing to point back to),
 * and a malformed message never throws past `parseQuery`.
 */
import { isIPv4, isIPv6 } from 'node:net';

/** Response codes used here. */
export const RCODE = { noError: 0, formErr: 1, servFail: 2, nxDomain: 3, notImp: 4, refused: 5 } as const;
/** Record types answered with addresses. */
export const QTYPE = { a: 1, aaaa: 28 } as const;
/** The Internet class. */
export const CLASS_IN = 1;

/** Largest query accepted (a question is at most 255 + 4 bytes; EDNS adds a few). */
export const MAX_QUERY_BYTES = 1024;
/** Largest UDP answer without EDNS (RFC 1035 4.2.1). */
export const MAX_UDP_ANSWER_BYTES = 512;

const HEADER = 12;
const FLAG_QR = 0x8000;
const FLAG_RD = 0x0100;
const FLAG_RA = 0x0080;
const FLAG_TC = 0x0200;

/** A parsed query. */
export interface DnsQuery {
  id: number;
  opcode: number;
  /** Recursion desired (echoed in the answer). */
  rd: boolean;
  /** The question's name as sent (labels joined by dots, no trailing dot), or undefined when unreadable. */
  name: string;
  qtype: number;
  qclass: number;
  /** The question section's bytes (name, type, class), echoed in the answer. */
  question: Buffer;
}

/** Why a message is not a query we answer; `id` is set when the header could be read (a FORMERR answer). */
export type ParseResult = { query: DnsQuery } | { error: string; id?: number; opcode?: number; rd?: boolean };

/** Parses a query; never throws. */
export function parseQuery(msg: Buffer): ParseResult {
  if (msg.length < HEADER) return { error: 'short header' };
  if (msg.length > MAX_QUERY_BYTES) return { error: 'too long' };
  const id = msg.readUInt16BE(0);
  const flags = msg.readUInt16BE(2);
  const opcode = (flags >> 11) & 0xf;
  const rd = (flags & FLAG_RD) !== 0;
  const head = { id, opcode, rd };
  if ((flags & FLAG_QR) !== 0) return { error: 'not a query' }; // never answer an answer
  if (msg.readUInt16BE(4) !== 1) return { ...head, error: 'one question expected' };
  if (msg.readUInt16BE(6) !== 0 || msg.readUInt16BE(8) !== 0) return { ...head, error: 'records in a query' };
  const name = readName(msg, HEADER);
  if ('error' in name) return { ...head, error: name.error };
  const at = name.end;
  if (at + 4 > msg.length) return { ...head, error: 'truncated question' };
  const qtype = msg.readUInt16BE(at);
  const qclass = msg.readUInt16BE(at + 2);
  const question = Buffer.from(msg.subarray(HEADER, at + 4));
  return { query: { ...head, name: name.name, qtype, qclass, question } };
}

/** The uncompressed name at `start`: its labels joined by dots and where it ends. */
function readName(msg: Buffer, start: number): { name: string; end: number } | { error: string } {
  const labels: string[] = [];
  let at = start;
  let total = 0;
  for (;;) {
    if (at >= msg.length) return { error: 'truncated name' };
    const len = msg[at]!;
    if (len === 0) return { name: labels.join('.'), end: at + 1 };
    if ((len & 0xc0) !== 0) return { error: 'compressed or extended label' };
    if (at + 1 + len > msg.length) return { error: 'truncated label' };
    total += len + 1;
    if (total > 255) return { error: 'name too long' };
    labels.push(msg.toString('latin1', at + 1, at + 1 + len));
    at += 1 + len;
  }
}

/** An answer's content. */
export interface DnsAnswer {
  rcode: number;
  /** Addresses answered (A for IPv4, AAAA for IPv6 ones); none for an error or an empty answer. */
  addresses?: readonly string[];
  ttl?: number;
}

interface Header {
  id: number;
  opcode: number;
  rd: boolean;
  rcode: number;
  tc?: boolean;
}

function header(h: Header, qd: number, an: number): Buffer {
  const b = Buffer.alloc(HEADER);
  b.writeUInt16BE(h.id, 0);
  const flags = FLAG_QR | ((h.opcode & 0xf) << 11) | (h.rd ? FLAG_RD : 0) | FLAG_RA | (h.rcode & 0xf);
  b.writeUInt16BE(flags | (h.tc ? FLAG_TC : 0), 2);
  b.writeUInt16BE(qd, 4);
  b.writeUInt16BE(an, 6);
  return b;
}

/** An answer with only a header (FORMERR to a query whose question could not be read). */
export function headerOnlyAnswer(id: number, opcode: number, rd: boolean, rcode: number): Buffer {
  return header({ id, opcode, rd, rcode }, 0, 0);
}

/** One resource record of the question's name (a pointer to it) with `data`. */
function record(qtype: number, ttl: number, data: Buffer): Buffer {
  const rr = Buffer.alloc(12 + data.length);
  rr.writeUInt16BE(0xc000 | HEADER, 0);
  rr.writeUInt16BE(qtype, 2);
  rr.writeUInt16BE(CLASS_IN, 4);
  rr.writeUInt32BE(Math.max(0, Math.min(ttl, 0x7fffffff)), 6);
  rr.writeUInt16BE(data.length, 10);
  data.copy(rr, 12);
  return rr;
}

function addressBytes(address: string): Buffer | undefined {
  if (isIPv4(address)) return Buffer.from(address.split('.').map(Number));
  if (!isIPv6(address)) return undefined;
  const [head = '', tail] = address.split('::') as [string, string?];
  const part = (s: string): number[] => (s === '' ? [] : s.split(':').map((g) => parseInt(g, 16)));
  const h = part(head);
  const t = tail === undefined ? [] : part(tail);
  if (h.some(Number.isNaN) || t.some(Number.isNaN)) return undefined; // an embedded IPv4 form: not used
  const groups = tail === undefined ? h : [...h, ...new Array<number>(8 - h.length - t.length).fill(0), ...t];
  if (groups.length !== 8) return undefined;
  const b = Buffer.alloc(16);
  groups.forEach((g, i) => b.writeUInt16BE(g, i * 2));
  return b;
}

/**
 * The answer to `q`: its question echoed, then one record per address of the question's type (the
 * name as a pointer to the question). At most `maxBytes`: records that do not fit are left out and
 * the TC bit set, so the resolver may ask again over TCP.
 */
export function buildAnswer(q: DnsQuery, a: DnsAnswer, maxBytes = MAX_UDP_ANSWER_BYTES): Buffer {
  const want = q.qtype === QTYPE.a ? 4 : q.qtype === QTYPE.aaaa ? 16 : 0;
  const records: Buffer[] = [];
  let size = HEADER + q.question.length;
  let tc = false;
  const addresses = a.rcode === RCODE.noError && want > 0 ? (a.addresses ?? []) : [];
  for (const address of addresses) {
    const data = addressBytes(address);
    if (data?.length !== want) continue;
    const rr = record(q.qtype, a.ttl ?? 0, data);
    if (size + rr.length > maxBytes) {
      tc = true;
      break;
    }
    records.push(rr);
    size += rr.length;
  }
  const h = header({ id: q.id, opcode: q.opcode, rd: q.rd, rcode: a.rcode, tc }, 1, records.length);
  return Buffer.concat([h, q.question, ...records]);
}
