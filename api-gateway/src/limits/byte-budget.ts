/**
 * A budget of bytes shared by every request: large agent answers being read and large buffered
 * responses waiting for their client take from it and give back when done. When it is used up, a
 * call that needs more is answered 503 `overloaded` instead of growing the heap: one tenant's
 * unread 12 MiB answers cannot pile up past it, whatever its concurrency.
 */

/** Pieces at or below this size are not counted (the kernel's socket buffers absorb them). */
export const UNCOUNTED_BYTES = 64 * 1024;

/**
 * Memory a buffered agent answer costs per byte while the call lives: the raw body, the strings
 * JSON.parse makes of it, and the serialized response written to the caller (measured: a 12 MiB
 * answer raised the gateway's RSS by 35 to 40 MiB).
 */
export const ANSWER_MEMORY_FACTOR = 3;

/** A shared byte budget; capacity 0 means unlimited. */
export class ByteBudget {
  private used = 0;

  constructor(readonly capacity: number) {}

  /** Bytes currently taken. */
  get inUse(): number {
    return this.used;
  }

  /** Takes `n` bytes if they fit; false (nothing taken) otherwise. */
  tryTake(n: number): boolean {
    if (this.capacity > 0 && this.used + n > this.capacity) return false;
    this.used += n;
    return true;
  }

  /** Gives back bytes taken earlier. */
  give(n: number): void {
    this.used = Math.max(0, this.used - n);
  }
}
