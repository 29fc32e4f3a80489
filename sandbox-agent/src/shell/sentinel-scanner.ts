/**
 * Finds a command's end-of-output sentinel in a byte stream that arrives in arbitrary chunks.
 * Bytes are released as soon as they cannot be the start of the sentinel, so streaming output is
 * not delayed: only a chunk tail that matches a prefix of the sentinel is held back.
 */

/** What one pushed chunk yields. */
export interface ScanResult {
  /** Output bytes that certainly precede the sentinel. */
  data: Buffer;
  /** True once the sentinel has been seen (in this chunk or before). */
  found: boolean;
  /** Bytes after the sentinel (not the command's output). */
  after: Buffer;
}

const EMPTY = Buffer.alloc(0);

/** Scans one stream (stdout or stderr) of one command for its sentinel. */
export class SentinelScanner {
  private held: Buffer = EMPTY;
  private seen = false;

  constructor(private readonly sentinel: Buffer) {
    if (sentinel.length === 0) throw new Error('empty sentinel');
  }

  /** True once the sentinel has been seen. */
  get found(): boolean {
    return this.seen;
  }

  /** Feeds a chunk; after the sentinel was found, every byte is reported as `after`. */
  push(chunk: Buffer): ScanResult {
    if (this.seen) return { data: EMPTY, found: true, after: chunk };
    const buf = this.held.length > 0 ? Buffer.concat([this.held, chunk]) : chunk;
    const at = buf.indexOf(this.sentinel);
    if (at >= 0) {
      this.seen = true;
      this.held = EMPTY;
      return { data: buf.subarray(0, at), found: true, after: buf.subarray(at + this.sentinel.length) };
    }
    const keep = partialSuffixLength(buf, this.sentinel);
    this.held = keep > 0 ? Buffer.from(buf.subarray(buf.length - keep)) : EMPTY;
    return { data: buf.subarray(0, buf.length - keep), found: false, after: EMPTY };
  }

  /** The held-back bytes, when the stream ended without a sentinel (they are output after all). */
  flush(): Buffer {
    const held = this.held;
    this.held = EMPTY;
    return held;
  }
}

/** Length of the longest suffix of `buf` that is a proper prefix of `pattern`. */
export function partialSuffixLength(buf: Buffer, pattern: Buffer): number {
  const max = Math.min(pattern.length - 1, buf.length);
  for (let k = max; k > 0; k--) {
    const start = buf.length - k;
    if (buf[start] === pattern[0] && buf.subarray(start).equals(pattern.subarray(0, k))) return k;
  }
  return 0;
}
