import { describe, expect, it } from '@jest/globals';

import { commandLine, cpTarget, keyValues, seconds, shellQuote } from '../../src/parse.js';

describe('argument parsing', () => {
  it('reads durations in s, m, h and refuses anything else', () => {
    expect([seconds('30', 't'), seconds('30s', 't'), seconds('5m', 't'), seconds('2h', 't')]).toEqual([
      30, 30, 300, 7200,
    ]);
    expect(() => seconds('5 min', '--timeout')).toThrow('--timeout: "5 min" is not a duration');
  });

  it('reads KEY=VALUE pairs (values may hold =)', () => {
    expect(keyValues(['A=1', 'B=x=y'], '--env')).toEqual({ A: '1', B: 'x=y' });
    expect(() => keyValues(['=1'], '--env')).toThrow('--env: "=1" is not KEY=VALUE');
    expect(keyValues(undefined, '--env')).toBeUndefined();
  });

  it('takes one word as a command line and quotes several word by word', () => {
    expect(commandLine(['ls | wc -l'])).toBe('ls | wc -l');
    expect(commandLine(['printf', '%s\\n', 'a b', "it's"])).toBe(`printf '%s\\n' 'a b' 'it'\\''s'`);
    expect(shellQuote('/workspace/a.txt')).toBe('/workspace/a.txt');
    expect(shellQuote('')).toBe(`''`);
  });

  it('tells session paths from local ones, relative to /workspace', () => {
    expect(cpTarget('box:/workspace/f.bin')).toEqual({ kind: 'remote', session: 'box', path: 'f.bin' });
    expect(cpTarget('box:dir/f')).toEqual({ kind: 'remote', session: 'box', path: 'dir/f' });
    expect(cpTarget('box:')).toEqual({ kind: 'remote', session: 'box', path: '' });
    expect(cpTarget('./a:b')).toEqual({ kind: 'local', path: './a:b' });
    expect(cpTarget('/tmp/x')).toEqual({ kind: 'local', path: '/tmp/x' });
    expect(cpTarget('Upper:x')).toEqual({ kind: 'local', path: 'Upper:x' });
    expect(() => cpTarget('box:/etc/passwd')).toThrow('session paths are under /workspace');
  });
});
