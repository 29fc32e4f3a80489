/**
 * One output stream of a background process: a ring of at most `capacity` bytes addressed by
 * absolute offsets (byte 0 is the first byte the process ever wrote). When the ring is full the
 * oldest bytes are dropped, and `dropped` says how many; a reader asking for dropped bytes gets
 * the oldest retained ones and learns how many it skipped. Memory grows with the output (doubling)
 * up to the capacity, so a quiet process costs little.
 */

const INITIAL_CAPACITY = 4096;

/** What a read returns. */
export interface RingRead {
  /** Absolute offset of the first byte of `bytes`. */
  offset: number;
  /** Bytes between the requested offset and `offset` that were dropped. */
  skipped: number;
  /** A copy of the bytes. */
  bytes: Buffer;
}

/** See the module comment. */
export class OutputRing {
  private store: Buffer = Buffer.alloc(0);
  /** Physical index of the oldest retained byte. */
  private head = 0;
  /** Bytes retained. */
  private held = 0;
  private total = 0;

  constructor(private readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new Error('capacity must be a positive integer');
  }

  /** Bytes ever written (the offset the next byte will get). */
  get size(): number {
    return this.total;
  }

  /** Bytes dropped from the front: the offset of the oldest retained byte. */
  get dropped(): number {
    return this.total - this.held;
  }

  /** Copies `chunk` in, dropping the oldest bytes beyond the capacity. */
  append(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.total += chunk.length;
    if (chunk.length >= this.capacity) {
      this.ensure(this.capacity);
      chunk.copy(this.store, 0, chunk.length - this.capacity);
      this.head = 0;
      this.held = this.capacity;
      return;
    }
    this.ensure(Math.min(this.capacity, this.held + chunk.length));
    const overflow = this.held + chunk.length - this.store.length;
    if (overflow > 0) {
      this.head = (this.head + overflow) % this.store.length;
      this.held -= overflow;
    }
    this.writeAt((this.head + this.held) % this.store.length, chunk);
    this.held += chunk.length;
  }

  /** Up to `maxBytes` bytes from `offset` (clamped to the oldest retained byte). */
  read(offset: number, maxBytes: number): RingRead {
    const from = Math.max(offset, this.dropped);
    const count = Math.max(0, Math.min(maxBytes, this.total - from));
    const bytes = Buffer.allocUnsafe(count);
    const start = (this.head + (from - this.dropped)) % Math.max(this.store.length, 1);
    const first = Math.min(count, this.store.length - start);
    this.store.copy(bytes, 0, start, start + first);
    if (first < count) this.store.copy(bytes, first, 0, count - first);
    return { offset: from, skipped: from - Math.min(offset, from), bytes };
  }

  /** Grows the store (linearising the retained bytes) until it holds `needed` bytes. */
  private ensure(needed: number): void {
    if (this.store.length >= needed) return;
    let capacity = Math.max(this.store.length * 2, INITIAL_CAPACITY);
    while (capacity < needed) capacity *= 2;
    const grown = Buffer.allocUnsafe(Math.min(capacity, this.capacity));
    const retained = this.read(this.dropped, this.held).bytes;
    retained.copy(grown, 0);
    this.store = grown;
    this.head = 0;
  }

  private writeAt(position: number, chunk: Buffer): void {
    const first = Math.min(chunk.length, this.store.length - position);
    chunk.copy(this.store, position, 0, first);
    if (first < chunk.length) chunk.copy(this.store, 0, first);
  }
}
