/**
 * Output handling shared by the KubernetesExec transport: byte caps with a truncated flag, and the
 * agent's encoding rule (UTF-8 text when valid, else base64), applied without splitting characters.
 */
import type { OutputEncoding } from './types.js';

const fatalUtf8 = new TextDecoder('utf-8', { fatal: true });

/** Encodes bytes the way the agent does: UTF-8 text when valid, else base64. */
export function encodeOutput(bytes: Buffer): { data: string; encoding: OutputEncoding } {
  try {
    return { data: fatalUtf8.decode(bytes), encoding: 'utf-8' };
  } catch {
    return { data: bytes.toString('base64'), encoding: 'base64' };
  }
}

/**
 * Length of the longest prefix of `bytes` that does not end inside a UTF-8 sequence. Used to cut
 * at a character boundary (caps, stream chunks) so valid text stays valid text.
 */
export function utf8Boundary(bytes: Buffer): number {
  const n = bytes.length;
  // A sequence is at most 4 bytes: look back at most 3 bytes for its lead byte.
  for (let back = 1; back <= Math.min(3, n); back++) {
    const b = bytes[n - back]!;
    if ((b & 0xc0) === 0x80) continue; // continuation byte: keep looking for the lead
    const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return need > back ? n - back : n;
  }
  return n;
}

/** Collects one stream's bytes up to a cap. */
export class CappedBuffer {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  /** True once bytes were dropped. */
  truncated = false;

  constructor(private readonly cap: number) {}

  /** Appends a chunk; returns the part that was kept (empty once the cap is reached). */
  push(chunk: Buffer): Buffer {
    const room = this.cap - this.size;
    if (room <= 0) {
      if (chunk.length > 0) this.truncated = true;
      return Buffer.alloc(0);
    }
    const kept = chunk.length <= room ? chunk : chunk.subarray(0, room);
    if (kept.length < chunk.length) this.truncated = true;
    this.chunks.push(kept);
    this.size += kept.length;
    return kept;
  }

  /** The collected bytes, cut back to a character boundary when truncated. */
  bytes(): Buffer {
    const all = Buffer.concat(this.chunks, this.size);
    return this.truncated ? all.subarray(0, utf8Boundary(all)) : all;
  }
}

/** Splits a byte stream into chunks that never end inside a UTF-8 character. */
export class Utf8Chunker {
  private carry = Buffer.alloc(0);

  /** Returns the bytes ready to emit; holds back at most 3 bytes of an unfinished character. */
  push(chunk: Buffer): Buffer {
    const joined = this.carry.length > 0 ? Buffer.concat([this.carry, chunk]) : chunk;
    const cut = utf8Boundary(joined);
    this.carry = Buffer.from(joined.subarray(cut));
    return joined.subarray(0, cut);
  }

  /** Whatever is held back, at the end of the stream. */
  flush(): Buffer {
    const rest = this.carry;
    this.carry = Buffer.alloc(0);
    return rest;
  }
}
