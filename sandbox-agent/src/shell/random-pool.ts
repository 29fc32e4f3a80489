/**
 * Random bytes for the per-command sentinels (wrapper.ts), drawn from a pooled buffer of the
 * CSPRNG's output: one randomFillSync per {@link SENTINEL_POOL_BYTES} / 16 commands instead of two
 * randomBytes calls per command (each a getpid(2) in OpenSSL's fork check, a Sentry round trip
 * under gVisor, on the path from the request to bash). Node's crypto.randomUUID pools its
 * entropy the same way.
 *
 * Every byte is handed out once: a draw takes the next unread bytes and the pool is refilled when
 * fewer are left than a draw needs, so two draws never share a byte and each is as unpredictable
 * as a fresh randomBytes. The bytes of coming draws sit in the agent's memory, like its token.
 */
import { randomFillSync } from 'node:crypto';

/** Fills a buffer with random bytes (randomFillSync; a fake in tests). */
export type RandomFill = (buffer: Buffer) => void;

/** Pool size of the sentinel draws: 128 commands of 16 bytes per refill. */
export const SENTINEL_POOL_BYTES = 2048;

/** See the module comment. */
export class RandomPool {
  private readonly pool: Buffer;
  /** The next unread byte; the pool starts spent, so the first draw fills it. */
  private offset: number;

  constructor(
    size: number,
    private readonly fill: RandomFill = (buffer) => void randomFillSync(buffer),
  ) {
    if (!Number.isInteger(size) || size <= 0) throw new Error(`invalid pool size: ${size}`);
    this.pool = Buffer.alloc(size);
    this.offset = size;
  }

  /** `bytes` unread random bytes as lowercase hex (2 digits a byte); at most the pool's size. */
  hex(bytes: number): string {
    if (!Number.isInteger(bytes) || bytes <= 0 || bytes > this.pool.length) {
      throw new Error(`invalid draw: ${bytes} bytes from a pool of ${this.pool.length}`);
    }
    if (this.pool.length - this.offset < bytes) {
      this.fill(this.pool);
      this.offset = 0;
    }
    const start = this.offset;
    this.offset += bytes;
    return this.pool.toString('hex', start, this.offset);
  }
}
