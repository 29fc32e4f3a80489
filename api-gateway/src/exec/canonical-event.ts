/**
 * The fast check of a streamed exec's output line (ndjson-guard.ts). The agent writes its output
 * events exactly as JSON.stringify does (`{"type":"stdout","data":"...","encoding":"base64"}`), so
 * almost every line is already canonical: the bytes JSON.stringify(JSON.parse(line)) would give
 * back. For such a line the guard's parse, schema check and re-serialization change nothing, yet
 * they are most of the gateway's CPU per streamed MB (JSON.parse and JSON.stringify copy and scan
 * every byte; the re-serialized string is then encoded again on the way out). This check proves a
 * line canonical with one scan of its bytes, without building a string, and measures its decoded
 * size, so the guard can pass the line on as it came. A line it cannot prove canonical (any other
 * key order, spacing, escape spelling, or non-ASCII text) takes the full path: parse, schema
 * check, re-serialization. The caller receives the same bytes either way.
 */

/** An output line proven canonical: its stream and the bytes its data decodes to. */
export interface CanonicalOutput {
  type: 'stdout' | 'stderr';
  decodedBytes: number;
}

const PREFIX = {
  stdout: Buffer.from('{"type":"stdout","data":"', 'latin1'),
  stderr: Buffer.from('{"type":"stderr","data":"', 'latin1'),
} as const;
const SUFFIX = {
  base64: Buffer.from('","encoding":"base64"}', 'latin1'),
  'utf-8': Buffer.from('","encoding":"utf-8"}', 'latin1'),
} as const;
const PREFIX_BYTES = PREFIX.stdout.length;

/**
 * 1 for the bytes JSON.stringify writes as they are in a string of ASCII text: 0x20..0x7f except
 * `"` and `\`. (Non-ASCII text is left to the full path: invalid UTF-8 would be changed by decoding,
 * and proving it valid costs what parsing does.)
 */
const PLAIN_BYTE = new Uint8Array(256);
for (let b = 0x20; b < 0x80; b++) PLAIN_BYTE[b] = 1;
PLAIN_BYTE[0x22] = 0;
PLAIN_BYTE[0x5c] = 0;

const HIGH_BITS = 0x80808080 | 0;
const ONES = 0x01010101;
const SPACES = 0x20202020;
const QUOTES = 0x22222222;
const BACKSLASHES = 0x5c5c5c5c;

/**
 * Whether line[start, end) holds only PLAIN_BYTE bytes: four at a time (a word has a byte below
 * 0x20, at or over 0x80, or equal to `"` or `\` exactly when the bit tricks below set a high bit;
 * 2.5x faster than a byte loop on 87 KB lines), the unaligned ends byte by byte.
 */
export function plainAscii(line: Buffer, start: number, end: number): boolean {
  let i = start;
  const head = Math.min(end, start + ((4 - ((line.byteOffset + start) & 3)) & 3));
  for (; i < head; i++) if (PLAIN_BYTE[line[i]!] === 0) return false;
  const words = (end - i) >>> 2;
  if (words > 0) {
    const w32 = new Int32Array(line.buffer, line.byteOffset + i, words);
    for (let k = 0; k < words; k++) {
      const w = w32[k]!;
      const q = w ^ QUOTES;
      const b = w ^ BACKSLASHES;
      // Per byte: over 0x7f | under 0x20 | zero after ^ '"' | zero after ^ '\' (exact: no byte
      // is missed; a borrow only runs on from a byte that was flagged itself).
      if ((w | ((w - SPACES) & ~w) | ((q - ONES) & ~q) | ((b - ONES) & ~b)) & HIGH_BITS) return false;
    }
    i += words * 4;
  }
  for (; i < end; i++) if (PLAIN_BYTE[line[i]!] === 0) return false;
  return true;
}

const BACKSLASH = 0x5c;
const EQUALS = 0x3d;
/** The escapes JSON.stringify writes for one character (after the backslash): `" \ b f n r t`. */
const SHORT_ESCAPE = new Uint8Array(256);
for (const c of '"\\bfnrt') SHORT_ESCAPE[c.charCodeAt(0)] = 1;
/** Control characters JSON.stringify writes as `\u00xx` (lowercase hex): all but b t n f r. */
const UNICODE_ESCAPES = new Set(
  Array.from({ length: 0x20 }, (_, c) => c)
    .filter((c) => ![0x08, 0x09, 0x0a, 0x0c, 0x0d].includes(c))
    .map((c) => `u${c.toString(16).padStart(4, '0')}`),
);

function startsWith(line: Buffer, prefix: Buffer): boolean {
  return line.length >= prefix.length && line.compare(prefix, 0, prefix.length, 0, prefix.length) === 0;
}

function endsWith(line: Buffer, suffix: Buffer): boolean {
  return (
    line.length >= suffix.length &&
    line.compare(suffix, 0, suffix.length, line.length - suffix.length, line.length) === 0
  );
}

/**
 * `line` (without its newline) as a canonical output event, or undefined when it is not provably
 * one (then it must take the full path, which may still accept it).
 */
export function canonicalOutput(line: Buffer): CanonicalOutput | undefined {
  const type = startsWith(line, PREFIX.stdout)
    ? 'stdout'
    : startsWith(line, PREFIX.stderr)
      ? 'stderr'
      : undefined;
  if (!type) return undefined;
  const decodedBytes = endsWith(line, SUFFIX.base64)
    ? base64Bytes(line, line.length - SUFFIX.base64.length)
    : endsWith(line, SUFFIX['utf-8'])
      ? textBytes(line, line.length - SUFFIX['utf-8'].length)
      : undefined;
  return decodedBytes === undefined ? undefined : { type, decodedBytes };
}

/** Decoded size of canonical base64 data in line[PREFIX_BYTES, end); undefined: not canonical. */
function base64Bytes(line: Buffer, end: number): number | undefined {
  if (end < PREFIX_BYTES || !plainAscii(line, PREFIX_BYTES, end)) return undefined;
  const n = end - PREFIX_BYTES;
  // As outputBytes (agent-json.ts) counts it from the decoded string: the same characters.
  const pad = n > 0 && line[end - 1] === EQUALS ? (n > 1 && line[end - 2] === EQUALS ? 2 : 1) : 0;
  return Math.floor((n * 3) / 4) - pad;
}

/** Decoded size of canonical text data in line[PREFIX_BYTES, end); undefined: not canonical. */
function textBytes(line: Buffer, end: number): number | undefined {
  if (end < PREFIX_BYTES) return undefined;
  if (plainAscii(line, PREFIX_BYTES, end)) return end - PREFIX_BYTES;
  // Text with escapes (newlines, tabs, quotes, control characters): only the spellings
  // JSON.stringify writes.
  let decoded = 0;
  for (let i = PREFIX_BYTES; i < end; i++) {
    if (PLAIN_BYTE[line[i]!] === 0) {
      const n = escapeLength(line, i, end);
      if (n === 0) return undefined;
      i += n - 1;
    }
    decoded++; // a plain byte, or an escape: one ASCII character, one byte
  }
  return decoded;
}

/** Length of the escape JSON.stringify writes starting at line[i]: 2 or 6; 0 when there is none. */
function escapeLength(line: Buffer, i: number, end: number): number {
  if (line[i] !== BACKSLASH || i + 1 >= end) return 0;
  if (SHORT_ESCAPE[line[i + 1]!] === 1) return 2;
  return i + 5 < end && UNICODE_ESCAPES.has(line.toString('latin1', i + 1, i + 6)) ? 6 : 0;
}
