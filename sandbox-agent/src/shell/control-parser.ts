/**
 * Parses the control channel (bash fd 3): records of three NUL-terminated fields,
 * `<sentinel>\0<exit status>\0<cwd>\0`, written by the wrapper after each command.
 *
 * The channel is hostile input: a command cannot inherit fd 3, but builtins it runs in the main
 * shell can write to the copy bash keeps of it while the command runs (`printf ... >&11`). An
 * unbounded parser let a flood without NUL bytes grow one field to hundreds of MiB, copied on
 * every chunk (the event loop stalled for about 35 s). So each field has a length limit and
 * each record a fixed shape; anything else is a {@link ControlProtocolError}, after which the
 * parser ignores its input (the owner kills that bash, see PersistentShell).
 */

/** One command's completion record. */
export interface ControlRecord {
  sentinel: string;
  status: number;
  cwd: string;
}

/** The control channel carried something the wrapper never writes. */
export class ControlProtocolError extends Error {
  override readonly name = 'ControlProtocolError';
}

const FIELDS = 3;

/**
 * Longest field: the cwd, which bash may hold longer than PATH_MAX (4096) after relative `cd`s
 * into deep trees, so 64 KiB; the other two fields are far shorter and checked by shape.
 */
export const MAX_FIELD_BYTES = 64 * 1024;

/** The sentinel as wrapper.ts builds it: `__sbx_` + 32 hex digits + `__`. */
const SENTINEL_SHAPE = /^__sbx_[0-9a-f]{32}__$/;
/** An exit status as bash prints `$?`: 0..255. */
const STATUS_SHAPE = /^[0-9]{1,3}$/;

const EMPTY = Buffer.alloc(0);

/** Incremental parser; chunks may split fields anywhere. Work per chunk is linear in its size. */
export class ControlParser {
  private pending: Buffer = EMPTY;
  private fields: string[] = [];
  private broken = false;

  /** Feeds bytes, returns the records they complete; throws once on a protocol breach. */
  push(chunk: Buffer): ControlRecord[] {
    if (this.broken) return [];
    const records: ControlRecord[] = [];
    let from = 0;
    let nul = chunk.indexOf(0);
    while (nul >= 0) {
      this.field(this.join(chunk.subarray(from, nul)));
      from = nul + 1;
      if (this.fields.length === FIELDS) records.push(this.record());
      nul = chunk.indexOf(0, from);
    }
    // Only the unterminated tail is kept, and never beyond the field limit.
    this.pending = Buffer.from(this.join(chunk.subarray(from)));
    return records;
  }

  /** Drops all further input (the owner found a breach the parser could not see, e.g. a foreign sentinel). */
  abandon(): void {
    this.broken = true;
    this.pending = EMPTY;
    this.fields = [];
  }

  private join(part: Buffer): Buffer {
    const length = this.pending.length + part.length;
    if (length > MAX_FIELD_BYTES)
      this.breach(`a field of the control channel exceeds ${MAX_FIELD_BYTES} bytes`);
    const whole = this.pending.length > 0 ? Buffer.concat([this.pending, part], length) : part;
    this.pending = EMPTY;
    return whole;
  }

  private field(bytes: Buffer): void {
    this.fields.push(bytes.toString('utf8'));
  }

  private record(): ControlRecord {
    const [sentinel = '', status = '', cwd = ''] = this.fields;
    this.fields = [];
    if (!SENTINEL_SHAPE.test(sentinel)) this.breach('a control record has no valid sentinel');
    if (!STATUS_SHAPE.test(status)) this.breach('a control record has no valid exit status');
    return { sentinel, status: Number.parseInt(status, 10), cwd };
  }

  private breach(detail: string): never {
    this.abandon();
    throw new ControlProtocolError(detail);
  }
}
