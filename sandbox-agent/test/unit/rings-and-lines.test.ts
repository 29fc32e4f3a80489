/**
 * The pure pieces behind stdin and processes: the output ring, chunk encoding, the NDJSON line
 * reader, strict base64 decoding and validation messages.
 */
import { describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';

import { decodeInput, encodeOutput } from '../../src/exec/encoding.js';
import { NdjsonWriter, type NdjsonSink } from '../../src/exec/observers.js';
import { LineTooLongError, NdjsonLineReader } from '../../src/http/ndjson-lines.js';
import { validated, VALIDATORS } from '../../src/http/validate.js';
import { readChunk } from '../../src/processes/chunks.js';
import { OutputRing } from '../../src/processes/output-ring.js';

/** An async source of chunks, one per event loop turn as a socket delivers them. */
async function* chunks(...parts: string[]): AsyncGenerator<Buffer> {
  for (const part of parts) {
    await new Promise((resolve) => setImmediate(resolve));
    yield Buffer.from(part);
  }
}

describe('OutputRing', () => {
  it('keeps everything below its capacity, addressed from offset 0', () => {
    const ring = new OutputRing(16);
    ring.append(Buffer.from('hello '));
    ring.append(Buffer.from('world'));
    expect([ring.size, ring.dropped]).toEqual([11, 0]);
    expect(ring.read(6, 100)).toEqual({ offset: 6, skipped: 0, bytes: Buffer.from('world') });
  });

  it('drops the oldest bytes beyond its capacity and says how many a read skipped', () => {
    const ring = new OutputRing(8);
    for (const piece of ['abc', 'defg', 'hij', 'klmno']) ring.append(Buffer.from(piece));
    expect([ring.size, ring.dropped]).toEqual([15, 7]);
    expect(ring.read(0, 100)).toEqual({ offset: 7, skipped: 7, bytes: Buffer.from('hijklmno') });
    expect(ring.read(10, 3)).toEqual({ offset: 10, skipped: 0, bytes: Buffer.from('klm') });
    expect(ring.read(15, 3).bytes.length).toBe(0);
  });

  it('keeps the tail of a chunk larger than the ring', () => {
    const ring = new OutputRing(4);
    ring.append(Buffer.from('0123456789'));
    expect(ring.read(0, 10)).toEqual({ offset: 6, skipped: 6, bytes: Buffer.from('6789') });
  });

  it('matches a plain copy of the last bytes for any sequence of appends', () => {
    const capacity = 5000;
    const ring = new OutputRing(capacity);
    let all = Buffer.alloc(0);
    for (let i = 0; i < 300; i++) {
      const piece = randomBytes(Math.floor(Math.random() * 300));
      ring.append(piece);
      all = Buffer.concat([all, piece]);
      const from = Math.floor(Math.random() * all.length);
      const read = ring.read(from, 700);
      const start = Math.max(from, all.length - capacity);
      expect(read.offset).toBe(start);
      expect(read.bytes.equals(all.subarray(start, start + 700))).toBe(true);
    }
    expect(ring.size).toBe(all.length);
  });
});

describe('readChunk', () => {
  it('holds a cut character back while more may come, and sends it at the end', () => {
    const ring = new OutputRing(64);
    ring.append(Buffer.from('caf\xc3', 'latin1'));
    expect(readChunk(ring, 0, 64, false)).toEqual({
      offset: 0,
      nextOffset: 3,
      skipped: 0,
      data: 'caf',
      encoding: 'utf-8',
    });
    expect(readChunk(ring, 0, 64, true)).toMatchObject({ nextOffset: 4, encoding: 'base64' });
  });

  it('never holds binary output back', () => {
    const ring = new OutputRing(64);
    ring.append(Buffer.from([0xff, 0x00, 0xe2]));
    expect(readChunk(ring, 0, 64, false)).toMatchObject({ nextOffset: 3, encoding: 'base64', data: '/wDi' });
  });
});

describe('NdjsonLineReader', () => {
  it('splits lines across and within chunks, drops CR and blank lines', async () => {
    const reader = new NdjsonLineReader(chunks('{"a"', ':1}\r\n\n{"b":2}\n{"c"', ':3}'));
    const lines: string[] = [];
    for (let line = await reader.next(100); line; line = await reader.next(100)) lines.push(line.toString());
    expect(lines).toEqual(['{"a":1}', '{"b":2}', '{"c":3}']);
    expect(reader.lineNumber).toBe(3);
  });

  it('refuses a line over its limit, also before its newline arrived', async () => {
    await expect(new NdjsonLineReader(chunks('x'.repeat(11), '\n')).next(10)).rejects.toThrow(
      LineTooLongError,
    );
    await expect(new NdjsonLineReader(chunks('x'.repeat(11))).next(10)).rejects.toThrow(
      'line 1 exceeds 10 bytes',
    );
  });

  it('applies each call its own limit', async () => {
    const reader = new NdjsonLineReader(chunks('short\n', 'a much longer line\n'));
    expect((await reader.next(5))?.toString()).toBe('short');
    expect((await reader.next(100))?.toString()).toBe('a much longer line');
    expect(await reader.next(100)).toBeUndefined();
  });
});

describe('decodeInput', () => {
  it.each([
    ['aGk=', 'hi'],
    ['aGkh', 'hi!'],
    ['', ''],
  ])('decodes canonical base64 %p', (text, expected) => {
    expect(decodeInput(text, 'base64')?.toString()).toBe(expected);
  });

  it.each(['aGk', 'a Gk=', 'aGk=aGk=', 'aG=k', '====', 'aGk=\n'])('refuses %p', (text) => {
    expect(decodeInput(text, 'base64')).toBeUndefined();
  });

  it('takes text as UTF-8', () => {
    expect(decodeInput('é')).toEqual(Buffer.from([0xc3, 0xa9]));
  });
});

describe('validation messages', () => {
  it.each([
    [{}, 'command is required'],
    [{ command: 1 }, 'command must be a string'],
    [{ command: 'x', env: { A: 1 } }, 'env.A must be a string'],
    [{ command: 'x', env: [] }, 'env must be an object'],
    [{ command: 'x', cwd: '' }, 'cwd must not be empty'],
    [{ command: 'x', timeoutSeconds: 0 }, 'timeoutSeconds must be >= 1'],
    [{ command: 'x', stdinEncoding: 'hex', stdin: '' }, 'stdinEncoding must be one of utf-8, base64'],
    [[], 'the body must be an object'],
  ])('describes %j as "%s"', (body, detail) => {
    expect(() => validated(VALIDATORS.execRequest, body)).toThrow(expect.objectContaining({ detail }));
  });
});

describe('NdjsonWriter lines', () => {
  /** A sink that records what is written (bytes as the socket would get them). */
  function sink(): { lines: () => string[]; res: NdjsonSink } {
    const chunks: Buffer[] = [];
    const res = {
      writeHead: () => res,
      flushHeaders: () => undefined,
      write: (data: string, encoding?: BufferEncoding) => {
        chunks.push(Buffer.from(data, encoding ?? 'utf8'));
        return true;
      },
      end: (data?: string) => {
        if (data) chunks.push(Buffer.from(data));
        return res;
      },
      destroyed: false,
      writableNeedDrain: false,
      once: () => res,
    } as unknown as NdjsonSink;
    return { lines: () => Buffer.concat(chunks).toString('utf8').split('\n').filter(Boolean), res };
  }

  it.each([
    ['plain text', Buffer.from('hello\n')],
    ['quotes, backslashes and control characters', Buffer.from('a"b\\c\u0000\u0001\t\r\n\u001f\u007f')],
    ['non-ASCII text and line separators', Buffer.from('é 漢字 😀 \u2028\u2029')],
    ['binary (base64)', Buffer.from([0xff, 0x00, 0xfe, 0x22, 0x5c])],
    // Ends in an ASCII byte: a tail that looks like a cut character is carried to the next chunk.
    ['random bytes', Buffer.concat([randomBytes(4096), Buffer.from('!')])],
  ])('writes exactly what JSON.stringify writes for %s', (_name, bytes) => {
    const { lines, res } = sink();
    const writer = new NdjsonWriter(res);
    writer.onStart();
    writer.onOutput('stderr', bytes);
    const [line] = lines();
    const decoded = encodeOutput(bytes);
    expect(line).toBe(JSON.stringify({ type: 'stderr', data: decoded.data, encoding: decoded.encoding }));
  });
});
