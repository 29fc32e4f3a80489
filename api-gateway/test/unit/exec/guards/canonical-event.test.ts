import { describe, expect, it } from '@jest/globals';

import { outputBytes } from '../../../../src/exec/agent/agent-json.js';
import {
  canonicalOutput,
  canonicalOutputOfPieces,
  plainAscii,
} from '../../../../src/exec/guards/canonical-event.js';

/** A seeded generator (mulberry32): the fuzz cases are the same on every run. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Encoding = 'utf-8' | 'base64';
const event = (type: string, data: string, encoding: Encoding): Buffer =>
  Buffer.from(JSON.stringify({ type, data, encoding }));

/** What the guard's full path gives for a line: the re-serialized event and its decoded size. */
function fullPath(line: Buffer): { text: string; decodedBytes: number; type: string } {
  const ev = JSON.parse(line.toString('utf8')) as { type: string; data: string; encoding: Encoding };
  return { text: JSON.stringify(ev), decodedBytes: outputBytes(ev.data, ev.encoding), type: ev.type };
}

/**
 * A line the fast check accepted: the full path accepts it too (fullPath throws otherwise), it is
 * already canonical (re-serializing changes nothing), and both report the same type and size.
 */
function expectFullPathAgrees(line: Buffer, fast: { type: string; decodedBytes: number }): void {
  const full = fullPath(line);
  expect(full.text).toBe(line.toString('utf8'));
  expect(fast).toEqual({ type: full.type, decodedBytes: full.decodedBytes });
}

describe('canonicalOutput', () => {
  it.each<[string, string, Encoding]>([
    ['base64', Buffer.from([0, 1, 2, 250, 255]).toString('base64'), 'base64'],
    ['base64, one pad', Buffer.from([1, 2, 3, 4, 5]).toString('base64'), 'base64'],
    ['base64, no pad', Buffer.from([1, 2, 3]).toString('base64'), 'base64'],
    ['empty', '', 'utf-8'],
    ['ASCII text', 'hello world ~ 0x7f:\x7f', 'utf-8'],
    ['text with the short escapes', 'a\nb\tc"d\\e\rf\bg\fh', 'utf-8'],
    ['text with control characters', 'esc \x1b[0m nul \x00 us \x1f', 'utf-8'],
  ])('recognizes what JSON.stringify writes: %s', (_what, data, encoding) => {
    for (const type of ['stdout', 'stderr']) {
      const line = event(type, data, encoding);
      const full = fullPath(line);
      expect(canonicalOutput(line)).toEqual({ type, decodedBytes: full.decodedBytes });
    }
  });

  it.each([
    ['another key order', '{"type":"stdout","encoding":"utf-8","data":"a"}'],
    ['spaces', '{"type": "stdout","data":"a","encoding":"utf-8"}'],
    ['an escaped slash', '{"type":"stdout","data":"a\\/b","encoding":"utf-8"}'],
    ['an escaped letter', '{"type":"stdout","data":"\\u0041","encoding":"utf-8"}'],
    ['an upper-case unicode escape', '{"type":"stdout","data":"\\u001B","encoding":"utf-8"}'],
    ['non-ASCII text', '{"type":"stdout","data":"caf\u00e9","encoding":"utf-8"}'],
    ['a raw newline', '{"type":"stdout","data":"a\nb","encoding":"utf-8"}'],
    ['a raw control character in base64', '{"type":"stdout","data":"QUJD\u0001","encoding":"base64"}'],
    ['a quote in base64', '{"type":"stdout","data":"QU"JD","encoding":"base64"}'],
    ['a backslash in base64', '{"type":"stdout","data":"QU\\\\JD","encoding":"base64"}'],
    ['an unknown stream', '{"type":"stdin","data":"a","encoding":"utf-8"}'],
    ['an unknown encoding', '{"type":"stdout","data":"a","encoding":"hex"}'],
    ['an extra member', '{"type":"stdout","data":"a","encoding":"utf-8","x":1}'],
    ['an exit event', '{"type":"exit","exitCode":0}'],
    ['a cut line', '{"type":"stdout","data":"'],
  ])('leaves %s to the full path', (_what, text) => {
    expect(canonicalOutput(Buffer.from(text))).toBeUndefined();
  });

  it('never accepts a line the full path would change or refuse (fuzzed)', () => {
    const next = random(15);
    const pieces = [
      'a',
      'Z',
      '0',
      '+',
      '/',
      '=',
      ' ',
      '"',
      '\\',
      '\\n',
      '\\/',
      '\\u001b',
      '\\u001B',
      '\\u0041',
      '\\x',
      '\\u00',
      '\n',
      '\u0000',
      '\u001f',
      '\u007f',
      '\u00e9',
      '\ud83d',
      '}',
      ',',
    ];
    let accepted = 0;
    for (let n = 0; n < 20_000; n++) {
      const base = event(
        next() < 0.5 ? 'stdout' : 'stderr',
        'abc',
        next() < 0.5 ? 'utf-8' : 'base64',
      ).toString();
      let data = '';
      for (let k = Math.floor(next() * 12); k > 0; k--) data += pieces[Math.floor(next() * pieces.length)];
      const at = base.indexOf('abc');
      const line = Buffer.from(base.slice(0, at) + data + base.slice(at + 3));
      const fast = canonicalOutput(line);
      if (!fast) continue;
      accepted++;
      expectFullPathAgrees(line, fast);
    }
    expect(accepted).toBeGreaterThan(1000); // the fast path is taken, not only declined
  });
});

describe('canonicalOutput on long text (the native scans)', () => {
  const pieces = ['text ', 'a', '~', '\\n', '\\t', '\\"', '\\\\', '\\r', '\\b', '\\f', '\\u001b', '\\u0000'];
  const hostile = [
    '"',
    '\\',
    '\\/',
    '\\u0041',
    '\\u001B',
    '\\x',
    '\\u00',
    '\n',
    '\u0000',
    '\u001f',
    '\u00e9',
    '\\\\"',
  ];

  it('agrees with the full path on text of 256 bytes and more (fuzzed)', () => {
    const next = random(17);
    let accepted = 0;
    let refused = 0;
    for (let n = 0; n < 3000; n++) {
      let data = '';
      const length = 256 + Math.floor(next() * 400);
      while (data.length < length) data += pieces[Math.floor(next() * pieces.length)];
      // Most lines get one hostile piece somewhere: at the start, the end, or anywhere.
      if (next() < 0.7) {
        const bad = hostile[Math.floor(next() * hostile.length)]!;
        const at = [0, data.length, Math.floor(next() * data.length)][Math.floor(next() * 3)]!;
        data = data.slice(0, at) + bad + data.slice(at);
      }
      const line = Buffer.from(`{"type":"stdout","data":"${data}","encoding":"utf-8"}`);
      const fast = canonicalOutput(line);
      if (!fast) {
        refused++;
        continue;
      }
      accepted++;
      expectFullPathAgrees(line, fast);
    }
    expect(accepted).toBeGreaterThan(900);
    expect(refused).toBeGreaterThan(900);
  });

  it('recognizes what JSON.stringify writes for long text with escapes', () => {
    const next = random(18);
    for (let n = 0; n < 300; n++) {
      let data = '';
      for (let k = 300 + Math.floor(next() * 300); k > 0; k--)
        data += String.fromCharCode(Math.floor(next() * 128));
      const line = event(next() < 0.5 ? 'stdout' : 'stderr', data, 'utf-8');
      const full = fullPath(line);
      expect(canonicalOutput(line)).toEqual({ type: full.type, decodedBytes: full.decodedBytes });
    }
  });

  it.each([
    ['a raw quote', '"'],
    ['an unknown escape', '\\x'],
    ['a cut unicode escape', '\\u00'],
    ['a raw newline', '\n'],
    ['a raw NUL', '\u0000'],
    ['a raw unit separator', '\u001f'],
    ['a quote after an escaped backslash', '\\\\"'],
  ])('refuses long text holding %s anywhere, as the full path does', (_what, bad) => {
    const body = 'line of text\\n'.repeat(30);
    // Never inside an escape (14 bytes a line; its escape at 12 and 13).
    for (const at of [0, 1, 12, 14, 15, 200, body.length - 2, body.length]) {
      const line = Buffer.from(
        `{"type":"stdout","data":"${body.slice(0, at)}${bad}${body.slice(at)}","encoding":"utf-8"}`,
      );
      expect(canonicalOutput(line)).toBeUndefined();
      expect(() => fullPath(line)).toThrow();
    }
  });

  it('leaves long text with any byte over 0x7f to the full path, at every alignment', () => {
    const body = Buffer.from('line of text\\n'.repeat(30));
    for (let b = 0x80; b <= 0xff; b++) {
      for (const at of [0, 1, 2, 3, 12, 14, 15, 16, 17, 200, body.length - 2, body.length - 1]) {
        const data = Buffer.concat([body.subarray(0, at), Buffer.from([b]), body.subarray(at)]);
        const line = Buffer.concat([
          Buffer.from('{"type":"stdout","data":"'),
          data,
          Buffer.from('","encoding":"utf-8"}'),
        ]);
        expect(canonicalOutput(line)).toBeUndefined();
      }
    }
  });

  it.each([
    ['an escaped slash', '\\/'],
    ['an escaped letter', '\\u0041'],
    ['an upper-case unicode escape', '\\u001B'],
  ])('leaves long text with %s to the full path (which re-serializes it)', (_what, odd) => {
    const line = Buffer.from(
      `{"type":"stdout","data":"${'line of text\\n'.repeat(30)}${odd}","encoding":"utf-8"}`,
    );
    expect(canonicalOutput(line)).toBeUndefined();
    expect(fullPath(line).text).not.toBe(line.toString());
  });
});

describe('plainAscii', () => {
  it('agrees with a byte-by-byte check for every byte, at every alignment and position', () => {
    const plain = (b: number): boolean => b >= 0x20 && b < 0x80 && b !== 0x22 && b !== 0x5c;
    const allBytes = Array.from({ length: 256 }, (_, b) => b);
    /** plainAscii of `view` with each byte value in turn at `pos` (the rest plain). */
    const everyByteAt = (view: Buffer, pos: number): boolean[] =>
      allBytes.map((b) => {
        view[pos] = b;
        const plainNow = plainAscii(view, 0, view.length);
        view[pos] = 0x61;
        return plainNow;
      });
    const backing = Buffer.alloc(64, 'a');
    for (let offset = 0; offset < 4; offset++) {
      for (const len of [1, 3, 4, 5, 8, 13, 32]) {
        const view = backing.subarray(offset, offset + len);
        for (let pos = 0; pos < len; pos++) expect(everyByteAt(view, pos)).toEqual(allBytes.map(plain));
      }
    }
    // Spans long enough for the native scans and the word loop: every byte value at the ends, around
    // the middle and at each place in a step of four words, at every alignment.
    const long = Buffer.alloc(320, 'a');
    for (let offset = 0; offset < 4; offset++) {
      for (const len of [256, 257, 258, 259, 300]) {
        const view = long.subarray(offset, offset + len);
        const mid = len >> 1;
        const positions = new Set<number>();
        for (let k = 0; k < 20; k++) [k, mid - 10 + k, len - 1 - k].forEach((p) => positions.add(p));
        for (const pos of positions) expect(everyByteAt(view, pos)).toEqual(allBytes.map(plain));
      }
    }
  });

  it('finds a control byte after a borrow in the word loop, and next to other flagged bytes', () => {
    // Bytes just over 0x20 beside a control byte: the subtraction borrows across them.
    for (const around of [0x20, 0x21, 0x7f, 0x61]) {
      for (let pos = 0; pos < 300; pos += 7) {
        const view = Buffer.alloc(300, around);
        view[pos] = 0x1f;
        expect(plainAscii(view, 0, view.length)).toBe(false);
        view[pos] = 0x00;
        expect(plainAscii(view, 0, view.length)).toBe(false);
      }
      expect(plainAscii(Buffer.alloc(300, around), 0, 300)).toBe(true);
    }
  });

  it('checks only the span it is given', () => {
    const line = Buffer.alloc(600, 'a');
    line[10] = 0x22;
    line[590] = 0x00;
    expect(plainAscii(line, 11, 590)).toBe(true);
    expect(plainAscii(line, 10, 590)).toBe(false);
    expect(plainAscii(line, 11, 591)).toBe(false);
    expect(plainAscii(line, 5, 5)).toBe(true);
  });
});

/** `line` + newline cut at the given offsets (ascending, inside the line). */
function cut(line: Buffer, at: number[]): Buffer[] {
  const whole = Buffer.concat([line, Buffer.from('\n')]);
  const bounds = [0, ...at, whole.length];
  return bounds.slice(1).map((end, k) => whole.subarray(bounds[k], end));
}

describe('canonicalOutputOfPieces', () => {
  const lines: Array<[string, Buffer]> = [
    ['base64', event('stdout', Buffer.from([0, 1, 2, 250, 255, 7, 8]).toString('base64'), 'base64')],
    ['base64, one pad', event('stderr', Buffer.from([1, 2, 3, 4, 5]).toString('base64'), 'base64')],
    ['base64, no pad', event('stdout', Buffer.from([1, 2, 3, 4, 5, 6]).toString('base64'), 'base64')],
    ['long base64', event('stdout', Buffer.alloc(700, 0xfe).toString('base64'), 'base64')],
    ['plain text', event('stdout', 'hello world ~ 0x7f:\x7f', 'utf-8')],
    ['long plain text', event('stderr', 'plain text '.repeat(60), 'utf-8')],
    ['text with escapes', event('stdout', 'a\nb\tc"d\\e\u001bf', 'utf-8')],
    ['long text with escapes', event('stdout', 'line of text\n'.repeat(40), 'utf-8')],
    ['an escaped slash', Buffer.from('{"type":"stdout","data":"a\\/b","encoding":"utf-8"}')],
    ['a raw control byte', Buffer.from('{"type":"stdout","data":"QUJD\u0001RA==","encoding":"base64"}')],
    ['a quote in base64', Buffer.from('{"type":"stdout","data":"QU"JDRA==","encoding":"base64"}')],
    ['non-ASCII', Buffer.from('{"type":"stdout","data":"caf\u00e9 au lait","encoding":"utf-8"}')],
    ['a carriage return', Buffer.from('{"type":"stdout","data":"QUJD","encoding":"base64"}\r')],
    ['another key order', Buffer.from('{"type":"stdout","encoding":"base64","data":"QUJD"}')],
    ['an exit event', Buffer.from('{"type":"exit","exitCode":0,"durationMs":1}')],
    ['an unknown stream', Buffer.from('{"type":"stdin","data":"QUJD","encoding":"base64"}')],
  ];

  it.each(lines)('agrees with canonicalOutput of the joined line at every cut: %s', (_what, line) => {
    const whole = canonicalOutput(line);
    let taken = 0;
    for (let a = 1; a <= line.length; a++) {
      const two = canonicalOutputOfPieces(cut(line, [a]));
      if (two) {
        taken++;
        expect(two).toEqual(whole);
      }
      // Three pieces: a second cut at a few places after the first.
      for (const b of [a + 1, a + 2, a + 5, line.length - 3, line.length - 1, line.length]) {
        if (b <= a || b > line.length) continue;
        const three = canonicalOutputOfPieces(cut(line, [a, b]));
        if (three) expect(three).toEqual(whole);
      }
    }
    // Plain data: every cut that leaves the prefix whole in the first piece and the suffix and two
    // data bytes in the last is taken (the fast path, not only declined).
    const plain = whole !== undefined && !line.includes('\\');
    if (plain) expect(taken).toBe(line.length - 25 - (line.toString().endsWith('"base64"}') ? 22 : 21) - 1);
    if (!whole) expect(taken).toBe(0);
  });

  it('never accepts pieces whose joined line the full path would change or refuse (fuzzed)', () => {
    const next = random(16);
    const alphabet = ['a', 'Q', '0', '+', '/', '=', ' ', '"', '\\', '\n', '\u0001', '\u00e9', '}', ','];
    let accepted = 0;
    for (let n = 0; n < 5000; n++) {
      let data = '';
      for (let k = 2 + Math.floor(next() * 40); k > 0; k--) {
        data += next() < 0.8 ? 'QUJD' : alphabet[Math.floor(next() * alphabet.length)];
      }
      const encoding = next() < 0.5 ? 'base64' : 'utf-8';
      const line = Buffer.from(`{"type":"stdout","data":"${data}","encoding":"${encoding}"}`);
      const at = [1 + Math.floor(next() * (line.length - 1))];
      if (next() < 0.5) at.push(at[0]! + 1 + Math.floor(next() * (line.length - at[0]!)));
      const fast = canonicalOutputOfPieces(cut(line, at));
      if (!fast) continue;
      accepted++;
      expectFullPathAgrees(line, fast);
    }
    expect(accepted).toBeGreaterThan(300); // the fast path is taken, not only declined
  });

  it('declines what is not one line ending in its newline', () => {
    const line = event('stdout', 'QUJDQUJDQUJD', 'base64');
    expect(canonicalOutputOfPieces([line])).toBeUndefined(); // one piece: canonicalOutput's case
    expect(canonicalOutputOfPieces([line.subarray(0, 30), line.subarray(30)])).toBeUndefined(); // no newline
    expect(canonicalOutputOfPieces([])).toBeUndefined();
    // Ends in another byte than the newline: not read as if it were one.
    const other = Buffer.concat([line, Buffer.from('x')]);
    expect(canonicalOutputOfPieces([other.subarray(0, 30), other.subarray(30)])).toBeUndefined();
    expect(
      canonicalOutputOfPieces([line.subarray(0, 30), Buffer.concat([line.subarray(30), Buffer.from('\n')])]),
    ).toEqual(canonicalOutput(line));
  });
});
