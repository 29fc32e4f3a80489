/**
 * Output encodings on the wire: a stream's bytes are sent as UTF-8 text when they are valid UTF-8,
 * else as base64. A multi-byte character cut by a chunk boundary or by the output cap must not
 * turn readable text into base64, hence the incomplete-tail handling.
 */
import { isUtf8 } from 'node:buffer';

/** Encoding names used in responses. */
export type OutputEncoding = 'utf-8' | 'base64';

/** Bytes as they travel in JSON. */
export interface EncodedOutput {
  data: string;
  encoding: OutputEncoding;
}

/** UTF-8 text when valid, else base64. */
export function encodeOutput(bytes: Buffer): EncodedOutput {
  return isUtf8(bytes)
    ? { data: bytes.toString('utf8'), encoding: 'utf-8' }
    : { data: bytes.toString('base64'), encoding: 'base64' };
}

/**
 * Length of a trailing incomplete UTF-8 sequence (0..3): a lead byte followed by fewer
 * continuation bytes than it announces.
 */
export function incompleteUtf8Tail(bytes: Buffer): number {
  for (let back = 1; back <= Math.min(3, bytes.length); back++) {
    const byte = bytes[bytes.length - back] ?? 0;
    if ((byte & 0xc0) === 0x80) continue; // continuation byte: keep looking for the lead
    const needed = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    return needed > back ? back : 0;
  }
  return 0;
}

/** Drops a trailing incomplete character (used when the output cap cut through one). */
export function trimIncompleteUtf8(bytes: Buffer): Buffer {
  return bytes.subarray(0, bytes.length - incompleteUtf8Tail(bytes));
}

/** Encodes a stream chunk by chunk, carrying a split character over to the next chunk. */
export class ChunkEncoder {
  private carry: Buffer = Buffer.alloc(0);

  /** Encodes what can be encoded now; undefined when everything was carried over. */
  push(chunk: Buffer): EncodedOutput | undefined {
    const bytes = this.carry.length > 0 ? Buffer.concat([this.carry, chunk]) : chunk;
    const tail = incompleteUtf8Tail(bytes);
    this.carry = Buffer.from(bytes.subarray(bytes.length - tail));
    const ready = bytes.subarray(0, bytes.length - tail);
    return ready.length > 0 ? encodeOutput(ready) : undefined;
  }

  /** The carried bytes at the end of the stream; dropped when this stream was truncated mid-character. */
  flush(truncated: boolean): EncodedOutput | undefined {
    const rest = this.carry;
    this.carry = Buffer.alloc(0);
    return rest.length > 0 && !truncated ? encodeOutput(rest) : undefined;
  }
}

/** Canonical base64: groups of four, padding only at the end (what Buffer#toString('base64') writes). */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * Bytes a client sent in JSON (stdin): UTF-8 text as is, base64 strictly. Buffer.from(x, 'base64')
 * alone skips characters outside the alphabet, so a corrupted payload would reach the command as
 * different bytes instead of being refused; undefined when `data` is not valid base64.
 */
export function decodeInput(data: string, encoding: OutputEncoding = 'utf-8'): Buffer | undefined {
  if (encoding === 'utf-8') return Buffer.from(data, 'utf8');
  return BASE64.test(data) ? Buffer.from(data, 'base64') : undefined;
}
