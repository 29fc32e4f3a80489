/**
 * The exit status that follows a command's sentinel on stdout: the wrapper writes
 * `<sentinel>\0<status>\0` there in one write(2) of under 50 bytes, which a pipe delivers whole,
 * so no other writer's bytes can land inside it. The bytes after the sentinel are parsed here;
 * anything but that shape means something rewrote the shell's framing (a command redefining the
 * wrapper's functions, or a DEBUG trap forging records), and is a {@link FramingError}: the
 * owner kills that bash (see PersistentShell).
 */

/** The shell's framing carried something the wrapper never writes. */
export class FramingError extends Error {
  override readonly name = 'FramingError';
}

/** `\0` + 1 to 3 digits (bash's `$?`, 0..255) + `\0`: at most 5 bytes. */
const MAX_TRAILER_BYTES = 5;
const TRAILER_SHAPE = /^\0([0-9]{1,3})\0/;

const EMPTY = Buffer.alloc(0);

/** Collects the trailer from the chunks after the stdout sentinel (they may split it anywhere). */
export class StatusTrailer {
  private pending: Buffer = EMPTY;
  private parsed: number | undefined;

  /** The exit status, once the trailer is complete. */
  get status(): number | undefined {
    return this.parsed;
  }

  /** Feeds bytes that followed the sentinel; returns those after the trailer (not the command's). */
  push(chunk: Buffer): Buffer {
    if (this.parsed !== undefined) return chunk;
    const buf = this.pending.length > 0 ? Buffer.concat([this.pending, chunk]) : chunk;
    const head = buf.subarray(0, MAX_TRAILER_BYTES).toString('latin1');
    const m = TRAILER_SHAPE.exec(head);
    if (m) {
      this.parsed = Number.parseInt(m[1]!, 10);
      this.pending = EMPTY;
      return buf.subarray(m[0].length);
    }
    if (buf.length >= MAX_TRAILER_BYTES || !/^(\0[0-9]{0,3})?$/.test(head))
      throw new FramingError('the sentinel on stdout is not followed by an exit status');
    this.pending = Buffer.from(buf);
    return EMPTY;
  }
}
