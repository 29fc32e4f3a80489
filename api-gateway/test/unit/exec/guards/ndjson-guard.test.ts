import { Readable } from 'node:stream';

import { describe, expect, it } from '@jest/globals';

import { readLimited } from '../../../../src/exec/read-limited.js';
import { NdjsonGuard, type NdjsonLimits } from '../../../../src/exec/guards/ndjson-guard.js';

const EXIT = {
  type: 'exit',
  exitCode: 0,
  durationMs: 1,
  truncated: false,
  timedOut: false,
  shellReset: false,
};
const line = (v: unknown): string => JSON.stringify(v) + '\n';
const out = (data: string, type = 'stdout'): string => line({ type, data, encoding: 'utf-8' });

/** Pipes `pieces` through a guard and reads what comes out (or the error). */
async function guard(pieces: Array<string | Buffer>, limits: Partial<NdjsonLimits> = {}): Promise<string> {
  const g = new NdjsonGuard({ maxBytes: 1 << 20, maxOutputBytes: 1000, ...limits });
  const src = Readable.from(pieces.map((p) => (typeof p === 'string' ? Buffer.from(p) : p)));
  src.on('error', (e) => g.destroy(e));
  return (await readLimited(src.pipe(g), 1 << 22)).toString();
}

describe('NdjsonGuard', () => {
  it('passes valid events through, re-serialized, whatever the split', async () => {
    const text = out('a') + out('b', 'stderr') + line(EXIT);
    expect(await guard([text])).toBe(text);
    const bytes = Buffer.from(text);
    expect(await guard([...bytes].map((x) => Buffer.from([x])))).toBe(text);
    expect(await guard([text.replace(/\n/g, '\r\n')])).toBe(text);
  });

  it('passes canonical lines on as they came and re-serializes the others', async () => {
    const b64 = line({
      type: 'stdout',
      data: Buffer.from([0, 255, 1]).toString('base64'),
      encoding: 'base64',
    });
    const text = out('a\n"b"\u001b') + b64 + line(EXIT);
    expect(await guard([text])).toBe(text);
    const reordered = '{"encoding":"utf-8", "data":"\\u0041","type":"stdout"}\n';
    expect(await guard([reordered + line(EXIT)])).toBe(
      '{"encoding":"utf-8","data":"A","type":"stdout"}\n' + line(EXIT),
    );
  });

  it.each([
    ['garbage', ['not json\n'], /not valid JSON/],
    ['a wrong shape', [line({ ...EXIT, exitCode: 'zero' })], /exitCode must be integer/],
    [
      'an unknown event',
      [line({ type: 'podIP', data: '10.0.0.1', encoding: 'utf-8' })],
      /type must be equal/,
    ],
    ['no exit event', [out('a')], /without an exit event/],
    ['lines after the exit', [line(EXIT) + out('late')], /after the exit/],
    ['a line that never ends', ['{"type":"stdout","data":"' + 'x'.repeat(8000)], /longer than/],
    ['output over the cap in one event', [out('x'.repeat(1001))], /over the output cap/],
    [
      'base64 output over the cap in one event',
      [line({ type: 'stdout', data: Buffer.alloc(1001).toString('base64'), encoding: 'base64' })],
      /over the output cap/,
    ],
    [
      'base64 output over the cap in many events',
      [line({ type: 'stderr', data: Buffer.alloc(600).toString('base64'), encoding: 'base64' }).repeat(2)],
      /stderr exceeds the output cap/,
    ],
    [
      'a raw control character in canonical form',
      ['{"type":"stdout","data":"a\u0001","encoding":"utf-8"}\n'],
      /not valid JSON/,
    ],
    [
      'output over the cap in many events',
      [out('x'.repeat(600)) + out('y'.repeat(600))],
      /exceeds the output cap/,
    ],
  ])('refuses %s with 502 agent-protocol-error', async (_what, pieces, message) => {
    const err = (await guard(pieces).catch((e: unknown) => e)) as {
      slug: string;
      status: number;
      detail: string;
    };
    expect(err).toMatchObject({ slug: 'agent-protocol-error', status: 502 });
    expect(err.detail).toMatch(message);
  });

  it('gives the same bytes whatever the split, for lines checked in pieces or joined', async () => {
    const b64 = (n: number, type = 'stdout'): string =>
      line({ type, data: Buffer.alloc(n, n & 0xff).toString('base64'), encoding: 'base64' });
    const text =
      b64(300) +
      out('plain text, long enough to be cut '.repeat(8)) +
      b64(301, 'stderr') +
      out('escaped\n"text"\t'.repeat(10)) +
      '{"encoding":"utf-8","data":"\\u0041","type":"stdout"}\n' + // re-serialized
      b64(302) +
      line(EXIT);
    const expected = text.replace(
      '{"encoding":"utf-8","data":"\\u0041","type":"stdout"}',
      '{"encoding":"utf-8","data":"A","type":"stdout"}',
    );
    const bytes = Buffer.from(text);
    expect(await guard([bytes], { maxOutputBytes: 4000 })).toBe(expected);
    for (let a = 1; a < bytes.length; a += 3) {
      const pieces = [bytes.subarray(0, a), bytes.subarray(a)];
      expect(await guard(pieces, { maxOutputBytes: 4000 })).toBe(expected);
    }
    // Reads of every size from 1 to 97 bytes: lines in two to hundreds of pieces.
    for (let size = 1; size < 98; size += 6) {
      const pieces: Buffer[] = [];
      for (let at = 0; at < bytes.length; at += size) pieces.push(bytes.subarray(at, at + size));
      expect(await guard(pieces, { maxOutputBytes: 4000 })).toBe(expected);
    }
  });

  it('passes a canonical line that came in pieces on as those pieces, not joined', async () => {
    const whole = Buffer.from(
      line({ type: 'stdout', data: Buffer.alloc(600, 1).toString('base64'), encoding: 'base64' }),
    );
    const pieces = [Buffer.from(whole.subarray(0, 300)), Buffer.from(whole.subarray(300))];
    const g = new NdjsonGuard({ maxBytes: 1 << 20, maxOutputBytes: 1000 });
    const chunks: Buffer[] = [];
    g.on('data', (c: Buffer) => chunks.push(c));
    const done = new Promise((r) => g.on('end', r));
    for (const p of pieces) g.write(p);
    g.end(line(EXIT));
    await done;
    expect(chunks.slice(0, 2).map((c) => c.buffer)).toEqual(pieces.map((p) => p.buffer));
    expect(Buffer.concat(chunks).toString()).toBe(whole.toString() + line(EXIT));
  });

  it.each([
    ['over the cap in one split line', [2000], /over the output cap/],
    ['over the cap in many split lines', [600, 600], /stdout exceeds the output cap/],
  ])('counts split lines against the output cap: %s', async (_what, sizes, message) => {
    const text = sizes
      .map((n) => line({ type: 'stdout', data: Buffer.alloc(n).toString('base64'), encoding: 'base64' }))
      .join('');
    const bytes = Buffer.from(text + line(EXIT));
    for (const a of [1, 30, 100, 500]) {
      const err = (await guard([
        bytes.subarray(0, a),
        bytes.subarray(a, a + 700),
        bytes.subarray(a + 700),
      ]).catch((e: unknown) => e)) as { slug: string; detail: string };
      expect(err).toMatchObject({ slug: 'agent-protocol-error' });
      expect(err.detail).toMatch(message);
    }
  });

  it.each([
    ['a line longer than the limit, split', 'x', /longer than/],
    ['a raw control byte, split', '\u0001', /not valid JSON/],
    ['a raw quote, split', '"', /not valid JSON/],
  ])('refuses %s', async (_what, bad, message) => {
    const data = _what.startsWith('a line longer')
      ? 'QUJD'.repeat(2000)
      : 'QUJD'.repeat(100) + bad + 'QUJD'.repeat(100);
    const bytes = Buffer.from(`{"type":"stdout","data":"${data}","encoding":"base64"}\n` + line(EXIT));
    for (const a of [10, 200, 450]) {
      const err = (await guard([bytes.subarray(0, a), bytes.subarray(a)]).catch((e: unknown) => e)) as {
        detail: string;
      };
      expect(err.detail).toMatch(message);
    }
  });

  it('refuses a split output line after the exit event', async () => {
    const late = line({ type: 'stdout', data: Buffer.alloc(300).toString('base64'), encoding: 'base64' });
    const bytes = Buffer.from(line(EXIT) + late);
    const err = (await guard([bytes.subarray(0, 150), bytes.subarray(150)]).catch((e: unknown) => e)) as {
      detail: string;
    };
    expect(err.detail).toMatch(/after the exit/);
  });

  it('refuses a stream over the byte limit with 502 agent-answer-too-large', async () => {
    const many = Array.from({ length: 100 }, () => out('t')).join('');
    const err = await guard([many, line(EXIT)], { maxBytes: 1000 }).catch((e: unknown) => e);
    expect(err).toMatchObject({ slug: 'agent-answer-too-large', status: 502 });
  });
});
