/**
 * A growable byte buffer: chunks are copied into one backing Buffer that doubles as needed.
 *
 * Output arrives in chunks of whatever size the pipe read gave, down to one byte when a command
 * writes slowly byte by byte; keeping each chunk as its own Buffer costs a few hundred bytes of
 * objects per chunk, so a 1 MiB capped stream could hold hundreds of MiB. Copying keeps memory at
 * most twice the bytes held.
 */

const INITIAL_CAPACITY = 4096;

/** See the module comment. */
export class ByteBuffer {
  private store: Buffer = Buffer.alloc(0);
  private used = 0;

  /** Bytes held. */
  get length(): number {
    return this.used;
  }

  /** Copies `chunk` in. */
  append(chunk: Buffer): void {
    const needed = this.used + chunk.length;
    if (needed > this.store.length) {
      let capacity = Math.max(this.store.length * 2, INITIAL_CAPACITY);
      while (capacity < needed) capacity *= 2;
      const grown = Buffer.allocUnsafe(capacity);
      this.store.copy(grown, 0, 0, this.used);
      this.store = grown;
    }
    chunk.copy(this.store, this.used);
    this.used = needed;
  }

  /** The bytes held (a view; valid until the next append or take). */
  bytes(): Buffer {
    return this.store.subarray(0, this.used);
  }

  /** A copy of the bytes held, emptying the buffer (its capacity is released). */
  take(): Buffer {
    const out = Buffer.from(this.bytes());
    this.store = Buffer.alloc(0);
    this.used = 0;
    return out;
  }
}
