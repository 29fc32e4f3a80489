/**
 * Parses the control channel (bash fd 3): records of three NUL-terminated fields,
 * `<sentinel>\0<exit status>\0<cwd>\0`, written by the wrapper after each command.
 */

/** One command's completion record. */
export interface ControlRecord {
  sentinel: string;
  status: number;
  cwd: string;
}

const FIELDS = 3;

/** Incremental parser; chunks may split fields anywhere. */
export class ControlParser {
  private pending: Buffer = Buffer.alloc(0);
  private fields: string[] = [];

  /** Feeds bytes, returns the records they complete. */
  push(chunk: Buffer): ControlRecord[] {
    this.pending = this.pending.length > 0 ? Buffer.concat([this.pending, chunk]) : chunk;
    const records: ControlRecord[] = [];
    let nul = this.pending.indexOf(0);
    while (nul >= 0) {
      this.fields.push(this.pending.subarray(0, nul).toString('utf8'));
      this.pending = this.pending.subarray(nul + 1);
      if (this.fields.length === FIELDS) {
        const [sentinel = '', status = '', cwd = ''] = this.fields;
        records.push({ sentinel, status: Number.parseInt(status, 10), cwd });
        this.fields = [];
      }
      nul = this.pending.indexOf(0);
    }
    this.pending = Buffer.from(this.pending);
    return records;
  }
}
