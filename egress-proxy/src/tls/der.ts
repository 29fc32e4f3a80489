/**
 * A minimal DER writer: just what an X.509 certificate of ca.ts needs (RFC 5280, X.690).
 */

/** A DER TLV with a definite length. */
export function tlv(tag: number, body: Buffer): Buffer {
  const n = body.length;
  let len: Buffer;
  if (n < 0x80) len = Buffer.from([n]);
  else if (n < 0x100) len = Buffer.from([0x81, n]);
  else if (n < 0x10000) len = Buffer.from([0x82, n >> 8, n & 0xff]);
  else len = Buffer.from([0x83, n >> 16, (n >> 8) & 0xff, n & 0xff]);
  return Buffer.concat([Buffer.from([tag]), len, body]);
}

export const seq = (...items: Buffer[]): Buffer => tlv(0x30, Buffer.concat(items));
export const set = (...items: Buffer[]): Buffer => tlv(0x31, Buffer.concat(items));
export const octets = (b: Buffer): Buffer => tlv(0x04, b);
export const bool = (v: boolean): Buffer => tlv(0x01, Buffer.from([v ? 0xff : 0x00]));
export const utf8 = (s: string): Buffer => tlv(0x0c, Buffer.from(s, 'utf8'));
/** A BIT STRING with no unused bits. */
export const bits = (b: Buffer): Buffer => tlv(0x03, Buffer.concat([Buffer.from([0]), b]));
/** Context-specific constructed [n] (EXPLICIT). */
export const explicit = (n: number, body: Buffer): Buffer => tlv(0xa0 + n, body);

/** A non-negative INTEGER from big-endian bytes (a leading zero added when the top bit is set). */
export function uint(bytes: Buffer): Buffer {
  let i = 0;
  while (i < bytes.length - 1 && bytes[i] === 0) i++;
  const b = bytes.subarray(i);
  return tlv(0x02, b[0]! & 0x80 ? Buffer.concat([Buffer.from([0]), b]) : b);
}

/** An OBJECT IDENTIFIER from dotted text. */
export function oid(dotted: string): Buffer {
  const parts = dotted.split('.').map(Number);
  const out = [40 * parts[0]! + parts[1]!];
  for (const p of parts.slice(2)) {
    const stack = [p & 0x7f];
    for (let v = p >>> 7; v > 0; v >>>= 7) stack.unshift((v & 0x7f) | 0x80);
    out.push(...stack);
  }
  return tlv(0x06, Buffer.from(out));
}

/** UTCTime (years 1950-2049) or GeneralizedTime, as RFC 5280 4.1.2.5 requires. */
export function time(d: Date): Buffer {
  const iso = d.toISOString().replace(/[-:T]/g, '').slice(0, 14) + 'Z'; // YYYYMMDDHHMMSSZ
  return d.getUTCFullYear() < 2050 ? tlv(0x17, Buffer.from(iso.slice(2))) : tlv(0x18, Buffer.from(iso));
}
