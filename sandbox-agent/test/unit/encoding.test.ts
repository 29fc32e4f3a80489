/** Output encodings: UTF-8 when valid, base64 otherwise, split characters kept whole. */
import { describe, expect, it } from '@jest/globals';

import {
  ChunkEncoder,
  encodeOutput,
  incompleteUtf8Tail,
  trimIncompleteUtf8,
} from '../../src/exec/encoding.js';

describe('encodeOutput', () => {
  it('returns valid UTF-8 as text and anything else as base64', () => {
    expect(encodeOutput(Buffer.from('héllo ✓'))).toEqual({ data: 'héllo ✓', encoding: 'utf-8' });
    expect(encodeOutput(Buffer.from([0xc3, 0x28]))).toEqual({ data: 'wyg=', encoding: 'base64' });
    expect(encodeOutput(Buffer.alloc(0))).toEqual({ data: '', encoding: 'utf-8' });
  });
});

describe('incomplete UTF-8 tails', () => {
  const check = Buffer.from('✓'); // e2 9c 93
  const emoji = Buffer.from('😀'); // f0 9f 98 80

  it.each([
    ['a complete character', Buffer.from('a✓'), 0],
    ['one byte of three', Buffer.concat([Buffer.from('a'), check.subarray(0, 1)]), 1],
    ['two bytes of three', Buffer.concat([Buffer.from('a'), check.subarray(0, 2)]), 2],
    ['three bytes of four', emoji.subarray(0, 3), 3],
    ['a stray continuation byte', Buffer.from([0x61, 0x80]), 0],
    ['ASCII', Buffer.from('abc'), 0],
  ])('measures %s', (_name, bytes, expected) => {
    expect(incompleteUtf8Tail(bytes)).toBe(expected);
  });

  it('trims only the incomplete character', () => {
    expect(trimIncompleteUtf8(Buffer.concat([Buffer.from('ok'), emoji.subarray(0, 2)])).toString()).toBe(
      'ok',
    );
  });
});

describe('ChunkEncoder', () => {
  it('carries a split character to the next chunk', () => {
    const encoder = new ChunkEncoder();
    const bytes = Buffer.from('a✓b');
    expect(encoder.push(bytes.subarray(0, 2))).toEqual({ data: 'a', encoding: 'utf-8' });
    expect(encoder.push(bytes.subarray(2, 3))).toBeUndefined();
    expect(encoder.push(bytes.subarray(3))).toEqual({ data: '✓b', encoding: 'utf-8' });
    expect(encoder.flush(false)).toBeUndefined();
  });

  it('flushes a dangling partial character as base64 unless the stream was truncated', () => {
    const partial = Buffer.from('✓').subarray(0, 2);
    const kept = new ChunkEncoder();
    kept.push(partial);
    expect(kept.flush(false)).toEqual({ data: partial.toString('base64'), encoding: 'base64' });
    const dropped = new ChunkEncoder();
    dropped.push(partial);
    expect(dropped.flush(true)).toBeUndefined();
  });
});
