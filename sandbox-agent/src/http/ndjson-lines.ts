/**
 * Reading an NDJSON request body line by line, pulled on demand: the body is read only as fast as
 * lines are asked for, so a consumer that waits (a command not reading its stdin) stops the reads
 * and TCP backpressure reaches the client. Each line is bounded (the caller passes the limit per
 * line); bytes are copied once per line, whatever the chunking.
 */

/** A line exceeded its limit (the reader is unusable afterwards). */
export class LineTooLongError extends Error {
  override readonly name = 'LineTooLongError';
}

const NEWLINE = 0x0a;
const EMPTY = Buffer.alloc(0);

/** See the module comment. Blank lines are skipped; a last line without a newline counts. */
export class NdjsonLineReader {
  private readonly source: AsyncIterator<Buffer>;
  /** Bytes received but not scanned for a newline yet. */
  private head: Buffer = EMPTY;
  /** Scanned bytes of the line being assembled. */
  private parts: Buffer[] = [];
  private partsLength = 0;
  private ended = false;
  /** Lines returned so far (for error messages: "line 3"). */
  lineNumber = 0;

  constructor(source: AsyncIterable<Buffer>) {
    this.source = source[Symbol.asyncIterator]();
  }

  /** The next non-blank line without its newline (and a trailing CR), or undefined at the end. */
  async next(maxBytes: number): Promise<Buffer | undefined> {
    for (;;) {
      const nl = this.head.indexOf(NEWLINE);
      if (nl >= 0) {
        const line = this.take(this.head.subarray(0, nl), maxBytes);
        this.head = this.head.subarray(nl + 1);
        if (line.length > 0) return this.counted(line);
        continue;
      }
      this.keep(this.head, maxBytes);
      this.head = EMPTY;
      const chunk = this.ended ? undefined : await this.source.next();
      if (chunk === undefined || chunk.done === true) {
        this.ended = true;
        if (this.partsLength === 0) return undefined;
        const line = this.take(EMPTY, maxBytes);
        if (line.length > 0) return this.counted(line);
        continue;
      }
      this.head = chunk.value;
    }
  }

  private counted(line: Buffer): Buffer {
    this.lineNumber++;
    return line;
  }

  private keep(part: Buffer, maxBytes: number): void {
    if (part.length === 0) return;
    this.partsLength += part.length;
    if (this.partsLength > maxBytes)
      throw new LineTooLongError(`line ${this.lineNumber + 1} exceeds ${maxBytes} bytes`);
    this.parts.push(part);
  }

  private take(tail: Buffer, maxBytes: number): Buffer {
    this.keep(tail, maxBytes);
    const [only] = this.parts;
    const line = this.parts.length === 1 && only ? only : Buffer.concat(this.parts, this.partsLength);
    this.parts = [];
    this.partsLength = 0;
    const end = line.length > 0 && line[line.length - 1] === 0x0d ? line.length - 1 : line.length;
    return line.subarray(0, end);
  }
}
