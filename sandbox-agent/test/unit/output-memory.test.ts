/**
 * Output arriving in tiny chunks (a command writing byte by byte, slower than the agent reads)
 * costs memory in proportion to its bytes, not to its number of chunks.
 */
import { describe, expect, it } from '@jest/globals';
import { EventEmitter } from 'node:events';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

import { ByteBuffer } from '../../src/exec/byte-buffer.js';
import { type NdjsonSink, NdjsonWriter, OutputCollector } from '../../src/exec/observers.js';
import type { ExecResult } from '../../src/shell/persistent-shell.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const RESULT: ExecResult = {
  exitCode: 0,
  durationMs: 1,
  truncated: false,
  timedOut: false,
  shellReset: false,
  truncatedStreams: { stdout: false, stderr: false },
};

/** A one-byte chunk with its own backing store, as a socket read of one byte yields. */
function oneByte(byte: number): Buffer {
  const chunk = Buffer.from(new ArrayBuffer(1));
  chunk[0] = byte;
  return chunk;
}

function heapAndBuffers(): number {
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

describe('ByteBuffer', () => {
  it('holds the appended bytes in order, across growth, and empties on take', () => {
    const b = new ByteBuffer();
    const parts = [Buffer.from('abc'), Buffer.alloc(10_000, 0x78), Buffer.from('end')];
    for (const p of parts) b.append(p);
    expect(b.bytes()).toEqual(Buffer.concat(parts));
    expect(b.take()).toEqual(Buffer.concat(parts));
    expect(b.length).toBe(0);
  });
});

describe('OutputCollector', () => {
  it('keeps 200k one-byte chunks in about their size, not in one object per chunk', () => {
    // Regression: the collector kept every chunk as its own Buffer (about 30 MB of objects here).
    const collector = new OutputCollector();
    const before = heapAndBuffers();
    for (let i = 0; i < 200_000; i++) collector.onOutput('stdout', oneByte(0x61 + (i % 26)));
    const grown = heapAndBuffers() - before;
    expect(grown).toBeLessThan(4 * 1024 * 1024);
    const body = collector.response(RESULT);
    expect(body.stdout).toHaveLength(200_000);
    expect(body.stdout.slice(0, 27)).toBe('abcdefghijklmnopqrstuvwxyza');
  });
});

/** A response whose client stopped reading after the first line. */
class SlowSink extends EventEmitter {
  readonly lines: string[] = [];
  destroyed = false;
  writableNeedDrain = false;

  writeHead(): this {
    return this;
  }
  flushHeaders(): void {}
  write(line: string): boolean {
    this.lines.push(line);
    this.writableNeedDrain = true;
    return false;
  }
  end(line: string): this {
    this.lines.push(line);
    return this;
  }
  drain(): void {
    this.writableNeedDrain = false;
    this.emit('drain');
  }
}

describe('NdjsonWriter', () => {
  it('gathers output while the client does not read and sends it as one line per stream at the drain', () => {
    // Regression: one queued write (a JSON line and its objects) per chunk, however slow the client.
    const sink = new SlowSink();
    const writer = new NdjsonWriter(sink as unknown as NdjsonSink);
    writer.onStart();
    for (let i = 0; i < 10_000; i++) writer.onOutput(i % 2 === 0 ? 'stdout' : 'stderr', oneByte(0x61));
    expect(sink.lines).toHaveLength(1);
    sink.drain();
    expect(sink.lines).toHaveLength(3);
    // A character split over two held chunks comes out whole.
    writer.onOutput('stdout', Buffer.from('é').subarray(0, 1));
    writer.onOutput('stdout', Buffer.from('é').subarray(1));
    writer.finish(RESULT);
    const events = sink.lines.map((l) => JSON.parse(l) as { type: string; data?: string });
    expect(events.map((e) => e.type)).toEqual(['stdout', 'stdout', 'stderr', 'stdout', 'exit']);
    const text = (type: string): string =>
      events
        .filter((e) => e.type === type)
        .map((e) => e.data)
        .join('');
    expect(text('stdout')).toBe('a'.repeat(5000) + 'é');
    expect(text('stderr')).toBe('a'.repeat(5000));
  });
});
