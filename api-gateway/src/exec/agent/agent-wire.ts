/**
 * The HTTP/1.1 wire format of the gateway's calls to sandbox agents: the request head it writes
 * and a strict, incremental parser of the answers. The agent runs inside the sandbox, so its
 * answers are untrusted input: the parser accepts only what an HTTP/1.1 server such as the agent
 * (node:http) sends, and anything else is a protocol error (the call fails and the connection is
 * destroyed, never reused):
 * - a status line `HTTP/1.x NNN reason` with a final status (no 1xx: the gateway never asks for
 *   100-continue), headers as `name: value` lines ended by CRLF (no bare CR or LF, no NUL, no
 *   obsolete line folding), a head of at most MAX_HEAD_BYTES;
 * - body framing by `Transfer-Encoding: chunked` (nothing else) or one `Content-Length`, never
 *   both; without either the body runs to the end of the connection (which is then not reused);
 * - bytes after the end of an answer (nothing was asked for) make the connection unusable;
 * - chunks must carry data: past MIN_CHUNKS_CHECKED chunks, an average below MIN_AVERAGE_CHUNK_BYTES
 *   is refused (an agent writing one byte per chunk makes the gateway parse a framing line per
 *   byte: 12 MB of 1-byte chunks cost seconds of CPU; node:http writes one chunk per `write`,
 *   and the agent's smallest write, an NDJSON event, is over 40 bytes).
 * Why not node:http: its client costs about 0.1 ms of CPU per call on the deployment's cores (a
 * ClientRequest, an IncomingMessage stream, agent bookkeeping), a quarter of what the gateway
 * added to an exec; see docs/benchmarks.md, "bench-gateway".
 */

import type { Readable } from 'node:stream';

/** Largest response head accepted (node:http's default limit is the same). */
export const MAX_HEAD_BYTES = 16 * 1024;
/** Longest chunk-size line (hex size and extensions). */
const MAX_CHUNK_LINE_BYTES = 1024;
/** Chunks accepted before their average size is checked. */
export const MIN_CHUNKS_CHECKED = 1024;
/**
 * Smallest average data bytes per chunk, once MIN_CHUNKS_CHECKED chunks came. The agent's
 * smallest chunk is an NDJSON event of one output byte (49 bytes).
 */
export const MIN_AVERAGE_CHUNK_BYTES = 32;

/** A malformed or unexpected answer: the connection is not reusable. */
export class AgentProtocolError extends Error {
  constructor(message: string) {
    super(`agent protocol error: ${message}`);
    this.name = 'AgentProtocolError';
  }
}

/** One request as the gateway sends it. */
export interface WireRequest {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** Already escaped by the caller (a fixed path or escaped file path segments). */
  path: string;
  token: string;
  body?: Buffer;
  /** A body copied from a stream with backpressure (uploads), instead of `body`. */
  bodyStream?: Readable;
  /** Length of `bodyStream` when known (Content-Length); unknown: sent chunked. */
  bodyLength?: number;
  contentType?: string;
  /** W3C trace context of the call (tracing on: tracing/tracing.ts); checked like every header value. */
  traceparent?: string;
}

const SAFE_PATH = /^\/[!-~]*$/;
const SAFE_VALUE = /^[\t\x20-\x7e]*$/;
const TRACEPARENT = /^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/;

/** The request head (request line and headers, ending with the empty line), latin1 text. */
export function requestHead(host: string, r: WireRequest): string {
  // The values come from the gateway's own code, never from the caller as they are; checked anyway
  // so that nothing can end a header line early.
  if (!SAFE_PATH.test(r.path)) throw new Error(`invalid agent request path ${JSON.stringify(r.path)}`);
  if (!SAFE_VALUE.test(r.token) || (r.contentType !== undefined && !SAFE_VALUE.test(r.contentType))) {
    throw new Error('invalid agent request header value');
  }
  let head = `${r.method} ${r.path} HTTP/1.1\r\nhost: ${host}\r\nauthorization: Bearer ${r.token}\r\naccept: application/json\r\n`;
  head += traceHeader(r.traceparent);
  if (r.bodyStream) {
    head += `content-type: ${r.contentType ?? 'application/octet-stream'}\r\n`;
    head +=
      r.bodyLength === undefined ? 'transfer-encoding: chunked\r\n' : `content-length: ${r.bodyLength}\r\n`;
  } else if (r.body) {
    head += `content-type: ${r.contentType ?? 'application/json'}\r\ncontent-length: ${r.body.length}\r\n`;
  } else if (r.method !== 'GET') {
    head += 'content-length: 0\r\n';
  }
  return head + '\r\n';
}

/** The traceparent header line (tracing on), checked to be exactly a W3C value. */
function traceHeader(traceparent: string | undefined): string {
  if (traceparent === undefined) return '';
  if (!TRACEPARENT.test(traceparent)) throw new Error('invalid agent request traceparent');
  return `traceparent: ${traceparent}\r\n`;
}

/** Where the parsed parts of an answer go. */
export interface ResponseSink {
  /** The head is complete. */
  onHead(status: number, headers: Record<string, string>): void;
  /** A piece of the body (a view into a buffer node:net hands over for good: safe to keep). */
  onBody(chunk: Buffer): void;
  /**
   * The body is complete; `reusable` says whether the answer allows another request on the
   * connection (bytes after the answer in the same read still make `feed` throw afterwards).
   */
  onEnd(reusable: boolean): void;
  /** A trailer field after a chunked body (checked like a header line), before onEnd. */
  onTrailer?(name: string, value: string): void;
}

const enum State {
  Head,
  Fixed,
  ChunkSize,
  ChunkData,
  ChunkDataEnd,
  Trailers,
  UntilClose,
  Done,
}

const STATUS_LINE = /^HTTP\/1\.([01]) ([2-5]\d\d)(?: [\t\x20-\x7e\x80-\xff]*)?$/;
/**
 * `name: value` with a token name and a value of visible characters, spaces and tabs. Linear (no
 * nested or adjacent overlapping repeats): the input is untrusted, so no backtracking blow-up.
 */
const HEADER_LINE = /^([!#$%&'*+\-.^_`|~0-9A-Za-z]+):([\t\x20-\x7e\x80-\xff]*)$/;
const CRLF = Buffer.from('\r\n', 'latin1');
const CRLFCRLF = Buffer.from('\r\n\r\n', 'latin1');
const CHUNK_SIZE = /^([0-9A-Fa-f]{1,12})[\t ]*(?:;[\t\x20-\x7e]*)?$/;
const CONTENT_LENGTH = /^\d{1,15}$/;

/** A part of an answer ended by a delimiter, with its size limit. */
interface Delimiter {
  end: Buffer;
  max: number;
  tooLong: string;
}
const HEAD: Delimiter = { end: CRLFCRLF, max: MAX_HEAD_BYTES, tooLong: 'response head too large' };
const CHUNK_LINE: Delimiter = { end: CRLF, max: MAX_CHUNK_LINE_BYTES, tooLong: 'chunk line too long' };

/**
 * The text from `i` up to the delimiter and the index after it; undefined while the delimiter has
 * not arrived. Throws once more than `max` bytes came without it.
 */
function delimited(buf: Buffer, i: number, d: Delimiter): { text: string; next: number } | undefined {
  const at = buf.indexOf(d.end, i);
  if ((at < 0 ? buf.length : at) - i > d.max) throw new AgentProtocolError(d.tooLong);
  if (at < 0) return undefined;
  return { text: buf.toString('latin1', i, at), next: at + d.end.length };
}

/** The strict incremental parser of one answer on a connection. */
export class ResponseParser {
  private state = State.Head;
  /** Unparsed bytes of a head, chunk-size line or trailer section split across reads. */
  private pending: Buffer | undefined;
  private remaining = 0;
  private keepAlive = true;
  /** Chunks and their data bytes so far (chunked bodies). */
  private chunks = 0;
  private chunkBytes = 0;

  constructor(
    private readonly sink: ResponseSink,
    private readonly method: string,
  ) {}

  /** True once the answer's body is complete. */
  get done(): boolean {
    return this.state === State.Done;
  }

  /** True while the body is delimited only by the end of the connection. */
  get untilClose(): boolean {
    return this.state === State.UntilClose;
  }

  /**
   * Parses the next bytes of the connection. Throws AgentProtocolError on malformed input or on
   * bytes after the end of the answer.
   */
  feed(data: Buffer): void {
    const buf = this.pending ? Buffer.concat([this.pending, data]) : data;
    this.pending = undefined;
    let i = 0;
    while (i < buf.length) {
      if (this.state === State.Done) throw new AgentProtocolError('unexpected bytes after the response');
      const next = this.step(buf, i);
      if (next < 0) {
        this.pending = buf.subarray(i); // an incomplete line or CRLF: wait for more
        return;
      }
      i = next;
    }
  }

  /** Parses from `i` in the current state; the index after what was used, or -1 for "need more". */
  private step(buf: Buffer, i: number): number {
    switch (this.state) {
      case State.Head:
        return this.headBytes(buf, i);
      case State.Fixed:
      case State.ChunkData:
        return this.bodyBytes(buf, i);
      case State.ChunkSize:
      case State.Trailers:
        return this.lineBytes(buf, i);
      case State.ChunkDataEnd:
        if (buf.length - i < 2) return -1;
        if (buf[i] !== 0x0d || buf[i + 1] !== 0x0a) throw new AgentProtocolError('chunk not ended by CRLF');
        this.state = State.ChunkSize;
        return i + 2;
      default: // State.UntilClose
        this.sink.onBody(i === 0 ? buf : buf.subarray(i));
        return buf.length;
    }
  }

  /** The head, once its empty line is there. */
  private headBytes(buf: Buffer, i: number): number {
    const part = delimited(buf, i, HEAD);
    if (part) this.head(part.text);
    return part?.next ?? -1;
  }

  /** A chunk-size or trailer line, once its CRLF is there. */
  private lineBytes(buf: Buffer, i: number): number {
    if (this.state === State.ChunkSize) {
      const next = this.plainChunkSize(buf, i);
      if (next >= 0) return next;
    }
    const part = delimited(buf, i, CHUNK_LINE);
    if (part) this.chunkLine(part.text);
    return part?.next ?? -1;
  }

  /** Body bytes of a Content-Length body or of a chunk. */
  private bodyBytes(buf: Buffer, i: number): number {
    const n = Math.min(this.remaining, buf.length - i);
    this.sink.onBody(buf.subarray(i, i + n));
    this.remaining -= n;
    if (this.remaining === 0) {
      if (this.state === State.Fixed) this.end();
      else this.state = State.ChunkDataEnd;
    }
    return i + n;
  }

  /**
   * The common chunk-size line, hex digits and CRLF, read from the bytes without making a string
   * (this runs once per chunk); -1 for anything else, which the general path then reads or refuses.
   */
  private plainChunkSize(buf: Buffer, i: number): number {
    let size = 0;
    let j = i;
    for (; j < buf.length && j - i < 12; j++) {
      const digit = hexDigit(buf[j]!);
      if (digit < 0) break;
      size = size * 16 + digit;
    }
    if (j === i || j + 1 >= buf.length || buf[j] !== 0x0d || buf[j + 1] !== 0x0a) return -1;
    this.chunkSize(size);
    return j + 2;
  }

  /** A chunk-size line, or a trailer line after the last chunk. */
  private chunkLine(line: string): void {
    if (this.state === State.Trailers) {
      if (line === '') this.end();
      else this.sink.onTrailer?.(...checkHeaderLine(line));
      return;
    }
    const m = CHUNK_SIZE.exec(line);
    if (!m) throw new AgentProtocolError('invalid chunk size line');
    this.chunkSize(parseInt(m[1]!, 16));
  }

  /** A chunk of `size` data bytes begins (0: the last chunk, trailers follow). */
  private chunkSize(size: number): void {
    this.remaining = size;
    this.state = size === 0 ? State.Trailers : State.ChunkData;
    this.chunks++;
    this.chunkBytes += this.remaining;
    if (this.chunks > MIN_CHUNKS_CHECKED && this.chunkBytes < this.chunks * MIN_AVERAGE_CHUNK_BYTES) {
      throw new AgentProtocolError(`chunks too small (${this.chunks} chunks, ${this.chunkBytes} bytes)`);
    }
  }

  /** The connection ended: completes a body that runs until the close; false if the answer was cut off. */
  close(): boolean {
    if (this.state === State.UntilClose) {
      this.state = State.Done;
      this.sink.onEnd(false);
      return true;
    }
    return this.state === State.Done;
  }

  private head(text: string): void {
    const lines = text.split('\r\n');
    const m = STATUS_LINE.exec(lines[0]!);
    if (!m) throw new AgentProtocolError('invalid status line');
    if (m[1] === '0') this.keepAlive = false;
    const status = Number(m[2]);
    const headers = parseHeaders(lines);
    const connection = headers.connection?.toLowerCase();
    if (connection?.includes('close') && /(?:^|,)\s*close\s*(?:,|$)/.test(connection)) {
      this.keepAlive = false;
    }
    const te = headers['transfer-encoding'];
    const cl = headers['content-length'];
    if (te !== undefined && cl !== undefined) {
      throw new AgentProtocolError('both Transfer-Encoding and Content-Length');
    }
    this.sink.onHead(status, headers);
    if (this.method === 'HEAD' || status === 204 || status === 304) this.end();
    else this.framing(te, cl);
  }

  /** The body's framing from its headers. */
  private framing(te: string | undefined, cl: string | undefined): void {
    if (te !== undefined) {
      if (te.toLowerCase() !== 'chunked') throw new AgentProtocolError(`unsupported transfer encoding ${te}`);
      this.state = State.ChunkSize;
    } else if (cl !== undefined) {
      if (!CONTENT_LENGTH.test(cl)) throw new AgentProtocolError('invalid Content-Length');
      this.remaining = Number(cl);
      this.state = State.Fixed;
      if (this.remaining === 0) this.end();
    } else {
      this.keepAlive = false;
      this.state = State.UntilClose;
    }
  }

  private end(): void {
    this.state = State.Done;
    this.sink.onEnd(this.keepAlive);
  }
}

/** The value of a hex digit byte (0-9, a-f, A-F); -1 for any other byte. */
function hexDigit(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  const lower = c | 0x20;
  return lower >= 0x61 && lower <= 0x66 ? lower - 0x57 : -1;
}

/** The header lines of a head (after the status line), names in lower case. */
function parseHeaders(lines: string[]): Record<string, string> {
  // No prototype: untrusted names such as `constructor` or `__proto__` are plain keys.
  const headers = Object.create(null) as Record<string, string>;
  for (let k = 1; k < lines.length; k++) {
    const [name, value] = checkHeaderLine(lines[k]!);
    if (!(name in headers)) {
      headers[name] = value;
    } else if (name === 'content-length' || name === 'transfer-encoding' || name === 'connection') {
      // Repeated framing or connection headers are ambiguous; other repeats are joined.
      throw new AgentProtocolError(`repeated ${name} header`);
    } else {
      headers[name] += `, ${value}`;
    }
  }
  return headers;
}

/** Splits and checks one header line: [lower-case name, value without surrounding whitespace]. */
function checkHeaderLine(line: string): [string, string] {
  const m = HEADER_LINE.exec(line);
  if (!m) throw new AgentProtocolError('invalid header line');
  return [m[1]!.toLowerCase(), trimSpaces(m[2]!)];
}

/** The value without leading and trailing spaces and tabs (optional whitespace, RFC 9110). */
function trimSpaces(v: string): string {
  let a = 0;
  let b = v.length;
  while (a < b && isSpace(v.charCodeAt(a))) a++;
  while (b > a && isSpace(v.charCodeAt(b - 1))) b--;
  return a === 0 && b === v.length ? v : v.slice(a, b);
}

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x09;
}
