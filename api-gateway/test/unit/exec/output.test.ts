import { describe, expect, it } from '@jest/globals';

import { CappedBuffer, Utf8Chunker, encodeOutput, utf8Boundary } from '../../../src/exec/output.js';

const euro = Buffer.from('€'); // e2 82 ac

describe('output helpers', () => {
  it('encodes valid UTF-8 as text and anything else as base64', () => {
    expect(encodeOutput(Buffer.from('héllo'))).toEqual({ data: 'héllo', encoding: 'utf-8' });
    expect(encodeOutput(Buffer.from([0xc3]))).toEqual({ data: 'ww==', encoding: 'base64' });
  });

  it('finds the last character boundary', () => {
    expect(utf8Boundary(Buffer.concat([Buffer.from('a'), euro]))).toBe(4);
    expect(utf8Boundary(Buffer.concat([Buffer.from('a'), euro.subarray(0, 2)]))).toBe(1);
    expect(utf8Boundary(Buffer.concat([Buffer.from('a'), euro.subarray(0, 1)]))).toBe(1);
    expect(utf8Boundary(Buffer.from('abc'))).toBe(3);
  });

  it('caps bytes, flags truncation and cuts at a character boundary', () => {
    const cap = new CappedBuffer(5);
    cap.push(Buffer.from('ab'));
    cap.push(Buffer.concat([euro, euro]));
    cap.push(Buffer.from('more'));
    expect(cap.truncated).toBe(true);
    expect(cap.bytes().toString()).toBe('ab€');
  });

  it('does not flag output that fits exactly', () => {
    const cap = new CappedBuffer(3);
    cap.push(Buffer.from('abc'));
    expect([cap.truncated, cap.bytes().toString()]).toEqual([false, 'abc']);
  });

  it('chunks a stream without splitting characters across chunks', () => {
    const c = new Utf8Chunker();
    const out = [
      c.push(Buffer.concat([Buffer.from('x'), euro.subarray(0, 1)])),
      c.push(euro.subarray(1)),
      c.flush(),
    ];
    expect(out.map((b) => b.toString())).toEqual(['x', '€', '']);
  });
});
