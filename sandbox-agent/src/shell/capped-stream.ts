/**
 * The output cap of one stream of one command: the first `cap` bytes are kept, later bytes are
 * dropped (the pipe is still drained, so the command never blocks on a full pipe).
 */

/** Per-stream byte budget. */
export class CappedStream {
  private kept = 0;
  private over = false;

  constructor(private readonly cap: number) {}

  /** True once bytes were dropped. */
  get truncated(): boolean {
    return this.over;
  }

  /** The part of `chunk` that fits in the budget (possibly empty). */
  take(chunk: Buffer): Buffer {
    const room = this.cap - this.kept;
    if (chunk.length <= room) {
      this.kept += chunk.length;
      return chunk;
    }
    this.over = true;
    const part = chunk.subarray(0, Math.max(room, 0));
    this.kept += part.length;
    return part;
  }
}
