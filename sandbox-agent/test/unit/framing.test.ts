/** Pure pieces of the framing: sentinel scanning, the exit status after it, output cap, quoting, frames. */
import { describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';

import { CappedStream } from '../../src/shell/capped-stream.js';
import { partialSuffixLength, SentinelScanner } from '../../src/shell/sentinel-scanner.js';
import { FramingError, StatusTrailer } from '../../src/shell/status-trailer.js';
import { bashWord, buildWrapper, frame, FRAME_BLOCK, shellQuote } from '../../src/shell/wrapper.js';

const SENTINEL = Buffer.from('__sbx_abc__');

/** Feeds `input` to a scanner in chunks of `size` bytes; returns the output and what came after. */
function scanInChunks(input: Buffer, size: number): { output: string; after: string; found: boolean } {
  const scanner = new SentinelScanner(SENTINEL);
  let output = '';
  let after = '';
  for (let i = 0; i < input.length; i += size) {
    const r = scanner.push(input.subarray(i, i + size));
    output += r.data.toString();
    after += r.after.toString();
  }
  if (!scanner.found) output += scanner.flush().toString();
  return { output, after, found: scanner.found };
}

describe('SentinelScanner', () => {
  it.each([1, 2, 3, 5, 11, 100])('finds the sentinel split across chunks of %i bytes', (size) => {
    const input = Buffer.from('hello __sbx_ab world __sbx___sbx_abc__trailing');
    expect(scanInChunks(input, size)).toEqual({
      output: 'hello __sbx_ab world __sbx_',
      after: 'trailing',
      found: true,
    });
  });

  it('releases bytes at once unless they could start the sentinel', () => {
    const scanner = new SentinelScanner(SENTINEL);
    expect(scanner.push(Buffer.from('plain text\n')).data.toString()).toBe('plain text\n');
    expect(scanner.push(Buffer.from('almost __sb')).data.toString()).toBe('almost ');
    expect(scanner.push(Buffer.from('y')).data.toString()).toBe('__sby');
  });

  it('gives back held bytes when the stream ends without a sentinel', () => {
    expect(scanInChunks(Buffer.from('cut at __sbx_a'), 4)).toEqual({
      output: 'cut at __sbx_a',
      after: '',
      found: false,
    });
  });

  it('reports everything after the sentinel as not belonging to the command', () => {
    const scanner = new SentinelScanner(SENTINEL);
    scanner.push(Buffer.from('__sbx_abc__'));
    expect(scanner.push(Buffer.from('late')).after.toString()).toBe('late');
  });

  it('computes the longest partial suffix', () => {
    expect(partialSuffixLength(Buffer.from('xx__sbx_a'), SENTINEL)).toBe(7);
    expect(partialSuffixLength(Buffer.from('xx'), SENTINEL)).toBe(0);
    expect(partialSuffixLength(Buffer.from('_'), SENTINEL)).toBe(1);
  });
});

describe('StatusTrailer', () => {
  it.each([
    ['whole', ['\x000\x00']],
    ['split anywhere', ['\x00', '1', '2', '7', '\x00']],
    ['followed by background output', ['\x00255\x00late output']],
  ])('takes the exit status %s, and gives back what follows it', (_name, parts) => {
    const trailer = new StatusTrailer();
    const rest = parts.map((p) => trailer.push(Buffer.from(p, 'latin1')).toString('latin1')).join('');
    expect(trailer.status).toBe(Number(parts.join('').split('\x00')[1]));
    expect(rest).toBe(parts.join('').split('\x00').slice(2).join('\x00'));
  });

  it('waits for a trailer cut short, holding at most 4 bytes', () => {
    const trailer = new StatusTrailer();
    expect(trailer.push(Buffer.from('\x0012', 'latin1')).length).toBe(0);
    expect(trailer.status).toBeUndefined();
  });

  it.each([
    ['output instead of a status', 'text'],
    ['no NUL before the status', '0\x00'],
    ['a non-numeric status', '\x00ab\x00'],
    ['an overlong status', '\x001234\x00'],
    ['an empty status', '\x00\x00'],
  ])('refuses %s as a framing breach', (_name, text) => {
    expect(() => new StatusTrailer().push(Buffer.from(text, 'latin1'))).toThrow(FramingError);
  });
});

describe('CappedStream', () => {
  it('keeps the first cap bytes and flags the rest', () => {
    const cap = new CappedStream(5);
    expect(cap.take(Buffer.from('abc')).toString()).toBe('abc');
    expect(cap.truncated).toBe(false);
    expect(cap.take(Buffer.from('defg')).toString()).toBe('de');
    expect(cap.take(Buffer.from('h'))).toHaveLength(0);
    expect(cap.truncated).toBe(true);
  });
});

describe('shell quoting', () => {
  it.each(["it's", "''", 'a\nb', '$(touch /tmp/x) `id` $HOME \\ " !', '😀 é'])(
    'round-trips %j through bash',
    (value) => {
      const out = execFileSync('bash', ['--noprofile', '--norc', '-c', `printf %s ${shellQuote(value)}`]);
      expect(out.toString()).toBe(value);
    },
  );

  it('never puts the whole sentinel in the wrapper text', () => {
    const script = buildWrapper(
      { command: 'echo hi', cwd: '/tmp', env: { A: 'b' } },
      { head: '__sbx_1', tail: '2__' },
    );
    expect(script).not.toContain('__sbx_12__');
  });

  it('sends every command as a frame: 8 digits of length, the ASCII script, spaces up to a block', () => {
    for (const cmd of [
      { command: 'echo hi', cwd: '/tmp' },
      { command: 'echo h\u00e9 \u{1f600}', env: { A: 'd\u00e9j\u00e0' }, cwd: '/tmp/\u00e9' },
      { command: 'echo a\u0000b' },
      { command: `: ${'x'.repeat(3000)}` },
    ]) {
      const script = buildWrapper(cmd, { head: '__sbx_1', tail: '2__' });
      const m = /^(\d{8})/.exec(script);
      expect(m).not.toBeNull();
      const length = Number(m![1]);
      const body = script.slice(8, 8 + length);
      expect(script.length).toBe(Math.max(FRAME_BLOCK, 8 + length));
      expect(script.slice(8 + length)).toMatch(/^ *$/);
      expect([...Buffer.from(script)].every((b) => b > 0 && b < 0x80)).toBe(true);
      expect(body.startsWith('__sbx_w=; ')).toBe(true);
      expect(body.endsWith('\n')).toBe(true);
    }
  });

  it.each([
    ['ASCII', 'echo hi', "'echo hi'"],
    ['a non-ASCII character', 'echo h\u00e9', "$'echo h\\xc3\\xa9'"],
    ['quotes and backslashes beside one', "\u00e9'\\", "$'\\xc3\\xa9\\'\\\\'"],
    ['a NUL (dropped, as bash drops it)', 'a\u0000b', "$'ab'"],
  ])('spells a word with %s as ASCII', (_, value, word) => {
    expect(bashWord(value)).toBe(word);
  });

  it.each(["it's", 'a\nb\tc', '\u00e9\u00e0 \u{1f600}', "\u00e9 ' \\ $x `id` \x01\x7f"])(
    'round-trips %j through bash as a word',
    (value) => {
      const out = execFileSync('bash', ['--noprofile', '--norc', '-c', `printf %s ${bashWord(value)}`]);
      expect(out.toString()).toBe(value);
    },
  );

  it('refuses a frame that is not ASCII', () => {
    expect(() => frame('echo h\u00e9')).toThrow(/ASCII/);
    expect(frame('true')).toBe(`00000004true${' '.repeat(FRAME_BLOCK - 12)}`);
    const full = 'x'.repeat(FRAME_BLOCK - 8);
    expect(frame(full)).toBe(`${String(full.length).padStart(8, '0')}${full}`);
    expect(frame(`${full}y`)).toHaveLength(FRAME_BLOCK + 1);
  });

  it('refuses variable names that are not identifiers', () => {
    expect(() => buildWrapper({ command: 'true', env: { 'A;rm': 'x' } }, { head: 'a', tail: 'b' })).toThrow(
      /invalid variable name/,
    );
  });
});
