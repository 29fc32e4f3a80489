/**
 * The bounded event stream of one run: what the kernel produced (through the bridge) becomes the
 * wire contract's NDJSON lines, with every bound of crds/src/wire/code.ts enforced here whatever
 * the bridge did: stdout and stderr per run, split into chunks; each MIME item, all items of the
 * run, each serialized line and the whole stream; the traceback. What does not fit is dropped and
 * counted (`dropped`, `omitted`), never cut in the middle of an item, and the end line says
 * `truncated: true`.
 */
import {
  CODE_DISPLAY_MAX_BYTES,
  CODE_ITEM_MAX_BYTES,
  CODE_LINE_MAX_BYTES,
  CODE_RUN_MAX_BYTES,
  CODE_STREAM_CHUNK_BYTES,
  CODE_STREAM_MAX_BYTES,
  CODE_TRACEBACK_MAX_LINES,
  type CodeDataEvent,
  type CodeDropped,
  type CodeEndEvent,
  type CodeErrorEvent,
  type CodeOmittedItem,
} from '@sandbox-platform/api';

/** Room kept for the end line (and the error line) when the stream nears its total bound. */
const RESERVED_BYTES = 128 * 1024;
/** Characters of a traceback kept (its lines together). */
const TRACEBACK_MAX_CHARS = 64 * 1024;
/** Room kept for the end line alone. */
const END_RESERVED_BYTES = 4096;

/** Where the lines go (the HTTP answer); each string is one line without its newline. */
export type LineSink = (line: string) => void;

/** The end of a run as its context reports it. */
export type RunEnd = Pick<CodeEndEvent, 'status' | 'executionCount' | 'durationMs' | 'contextReset'>;

/** See the module comment. */
export class RunOutput {
  private readonly sent = { stdout: 0, stderr: 0 };
  private readonly dropped: CodeDropped = { stdout: 0, stderr: 0, displays: 0 };
  private displayLeft = CODE_DISPLAY_MAX_BYTES;
  private total = 0;
  private omittedAny = false;
  private ended = false;

  constructor(private readonly sink: LineSink) {}

  /** Stream text, within the per-stream bound, in chunks of at most CODE_STREAM_CHUNK_BYTES. */
  stream(name: 'stdout' | 'stderr', text: string): void {
    let bytes = Buffer.from(text, 'utf8');
    const room = Math.max(0, CODE_STREAM_MAX_BYTES - this.sent[name]);
    if (bytes.length > room) {
      this.dropped[name] += bytes.length - room;
      bytes = bytes.subarray(0, utf8Boundary(bytes, room));
    }
    for (let at = 0; at < bytes.length;) {
      const end = at + utf8Boundary(bytes.subarray(at), CODE_STREAM_CHUNK_BYTES);
      const chunk = bytes.subarray(at, end);
      if (this.emit({ type: name, text: chunk.toString('utf8') })) this.sent[name] += chunk.length;
      else this.dropped[name] += chunk.length;
      at = end;
    }
  }

  /** A result or display; items over the bounds are omitted and listed. */
  data(ev: CodeDataEvent): void {
    const data: Record<string, string> = {};
    const omitted: CodeOmittedItem[] = [...(ev.omitted ?? [])];
    for (const [mime, text] of Object.entries(ev.data)) {
      if (text === undefined) continue;
      const size = Buffer.byteLength(text, 'utf8');
      if (size > CODE_ITEM_MAX_BYTES || size > this.displayLeft) {
        omitted.push({ mime, bytes: size });
        continue;
      }
      this.displayLeft -= size;
      data[mime] = text;
    }
    const line = this.fitLine({ ...ev, data }, omitted);
    if (Object.keys(line.data).length === 0) this.dropped.displays++;
    if (line.omitted) this.omittedAny = true;
    if (!this.emit(line) && Object.keys(line.data).length > 0) this.dropped.displays++;
  }

  /** The run's error, its traceback bounded. */
  error(ev: CodeErrorEvent): void {
    const traceback: string[] = [];
    let chars = 0;
    for (const entry of ev.traceback) {
      chars += entry.length;
      if (traceback.length === CODE_TRACEBACK_MAX_LINES - 1 || chars > TRACEBACK_MAX_CHARS) {
        traceback.push('[traceback truncated]');
        break;
      }
      traceback.push(entry);
    }
    this.emit({ type: 'error', name: ev.name, value: ev.value, traceback }, END_RESERVED_BYTES);
  }

  /** Adds what the bridge already dropped before sending. */
  addDropped(d: CodeDropped): void {
    this.dropped.stdout += d.stdout;
    this.dropped.stderr += d.stderr;
    this.dropped.displays += d.displays;
  }

  /** The end line; nothing is written after it. */
  end(end: RunEnd): void {
    if (this.ended) return;
    const d = this.dropped;
    const truncated = this.omittedAny || d.stdout > 0 || d.stderr > 0 || d.displays > 0;
    const line: CodeEndEvent = { type: 'end', ...end, truncated, dropped: { ...d } };
    if (line.executionCount === undefined) delete line.executionCount;
    this.sink(JSON.stringify(line));
    this.ended = true;
  }

  /** Drops the largest items until the serialized line fits CODE_LINE_MAX_BYTES. */
  private fitLine(ev: CodeDataEvent, omitted: CodeOmittedItem[]): CodeDataEvent {
    const data: Record<string, string> = {};
    for (const [mime, text] of Object.entries(ev.data)) if (text !== undefined) data[mime] = text;
    const build = (): CodeDataEvent => {
      const line: CodeDataEvent = { type: ev.type, data };
      if (omitted.length > 0) line.omitted = omitted.slice(0, 64);
      if (ev.executionCount !== undefined) line.executionCount = ev.executionCount;
      return line;
    };
    let line = build();
    while (Buffer.byteLength(JSON.stringify(line)) > CODE_LINE_MAX_BYTES) {
      const [mime, text] = Object.entries(data).sort((a, b) => b[1].length - a[1].length)[0] ?? [];
      if (mime === undefined || text === undefined) break;
      delete data[mime];
      omitted.push({ mime, bytes: Buffer.byteLength(text) });
      line = build();
    }
    return line;
  }

  /** Writes a line unless it would take the stream past its total bound (minus `reserve`). */
  private emit(line: object, reserve = RESERVED_BYTES): boolean {
    if (this.ended) return false;
    const text = JSON.stringify(line);
    const bytes = Buffer.byteLength(text) + 1;
    if (this.total + bytes > CODE_RUN_MAX_BYTES - reserve) return false;
    this.total += bytes;
    this.sink(text);
    return true;
  }
}

/** The largest length <= max that does not split a UTF-8 character of `bytes`. */
export function utf8Boundary(bytes: Buffer, max: number): number {
  if (bytes.length <= max) return bytes.length;
  let end = max;
  // Back up over continuation bytes (10xxxxxx) to the start of the cut character.
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--;
  return end;
}
