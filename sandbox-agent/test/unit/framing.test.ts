/** Pure pieces of the framing: sentinel scanning, control records, output cap, quoting. */
import { describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';

import { CappedStream } from '../../src/shell/capped-stream.js';
import {
  ControlParser,
  ControlProtocolError,
  type ControlRecord,
  MAX_FIELD_BYTES,
} from '../../src/shell/control-parser.js';
import { partialSuffixLength, SentinelScanner } from '../../src/shell/sentinel-scanner.js';
import { buildWrapper, shellQuote } from '../../src/shell/wrapper.js';

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

describe('ControlParser', () => {
  const s1 = `__sbx_${'a'.repeat(32)}__`;
  const s2 = `__sbx_${'0123456789abcdef'.repeat(2)}__`;

  it('parses records split anywhere', () => {
    const parser = new ControlParser();
    const bytes = Buffer.from(`${s1}\x000\x00/work space\x00${s2}\x00127\x00/\x00`);
    const records = [...bytes].flatMap((b) => parser.push(Buffer.from([b])));
    expect(records).toEqual([
      { sentinel: s1, status: 0, cwd: '/work space' },
      { sentinel: s2, status: 127, cwd: '/' },
    ]);
  });

  it('accepts a cwd up to the field limit, split over many chunks', () => {
    const parser = new ControlParser();
    const cwd = `/${'d'.repeat(MAX_FIELD_BYTES - 1)}`;
    const bytes = Buffer.from(`${s1}\x000\x00${cwd}\x00`);
    const records: ControlRecord[] = [];
    for (let i = 0; i < bytes.length; i += 1000) records.push(...parser.push(bytes.subarray(i, i + 1000)));
    expect(records).toEqual([{ sentinel: s1, status: 0, cwd }]);
  });

  it('refuses a field without NUL beyond the limit at once, and ignores input afterwards', () => {
    // Regression: a flood without NUL bytes grew one field without bound, re-copied per chunk.
    const parser = new ControlParser();
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    expect(() => parser.push(chunk)).not.toThrow();
    expect(() => parser.push(Buffer.from('x'))).toThrow(ControlProtocolError);
    expect(parser.push(Buffer.from(`${s1}\x000\x00/\x00`))).toEqual([]);
  });

  it.each([
    ['an empty record', '\x00\x00\x00'],
    ['a sentinel of the wrong shape', `__sbx_abc__\x000\x00/\x00`],
    ['a sentinel with trailing junk', `${s1}x\x000\x00/\x00`],
    ['a non-numeric status', `${s1}\x00abc\x00/\x00`],
    ['an overlong status', `${s1}\x001234\x00/\x00`],
  ])('refuses %s as a protocol breach', (_name, text) => {
    expect(() => new ControlParser().push(Buffer.from(text))).toThrow(ControlProtocolError);
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
    expect(script.endsWith('\n')).toBe(true);
  });

  it('sends an ASCII wrapper as a `__sbx_r N` line and exactly N bytes bash reads with read -N', () => {
    const script = buildWrapper({ command: 'echo hi', cwd: '/tmp' }, { head: '__sbx_1', tail: '2__' });
    const m = /^__sbx_r (\d+); builtin eval "\$__sbx_w"\n/.exec(script);
    expect(m).not.toBeNull();
    const rest = script.slice(m![0].length);
    expect(Buffer.byteLength(rest)).toBe(Number(m![1]));
    expect(rest.startsWith('__sbx_w=; ')).toBe(true);
    expect(rest.endsWith('\n')).toBe(true);
    expect(rest.slice(0, -1)).not.toContain('\n');
  });

  it.each([
    ['a non-ASCII byte', 'echo h\u00e9'],
    ['a NUL', 'echo a\u0000b'],
  ])('sends a wrapper with %s as one line bash parses itself (read -N counts characters)', (_, command) => {
    const script = buildWrapper({ command }, { head: '__sbx_1', tail: '2__' });
    expect(script.startsWith('__sbx_c=; ')).toBe(true);
    expect(script.endsWith('\n')).toBe(true);
  });

  it('refuses variable names that are not identifiers', () => {
    expect(() => buildWrapper({ command: 'true', env: { 'A;rm': 'x' } }, { head: 'a', tail: 'b' })).toThrow(
      /invalid variable name/,
    );
  });
});
