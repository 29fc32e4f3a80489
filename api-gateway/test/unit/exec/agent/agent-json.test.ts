import { describe, expect, it } from '@jest/globals';

import {
  MAX_JSON_DEPTH,
  MAX_JSON_TOKENS,
  SCAN_THRESHOLD_BYTES,
  checkJsonShape,
  checkOutputCap,
  outputBytes,
  parseAgentJson,
  validateExecResult,
  validateWriteResult,
} from '../../../../src/exec/agent/agent-json.js';
import { AgentProtocolError } from '../../../../src/exec/agent/agent-wire.js';
import { result } from '../../../helpers/fake-transport.js';

const b = (s: string): Buffer => Buffer.from(s);

describe('checkJsonShape', () => {
  it('accepts flat objects, counting nothing inside strings', () => {
    expect(() => checkJsonShape(b(JSON.stringify(result({ stdout: '[[[[{{{{,,,,::::' }))))).not.toThrow();
    expect(() => checkJsonShape(b('{"a":"\\"[[[[[[[[[[[[\\\\"}'))).not.toThrow();
  });

  it(`refuses nesting deeper than ${MAX_JSON_DEPTH}`, () => {
    expect(() => checkJsonShape(b('['.repeat(MAX_JSON_DEPTH) + ']'.repeat(MAX_JSON_DEPTH)))).not.toThrow();
    expect(() => checkJsonShape(b('['.repeat(MAX_JSON_DEPTH + 1)))).toThrow(/nests deeper/);
  });

  it(`refuses more than ${MAX_JSON_TOKENS} members`, () => {
    const keys = (n: number): string => `{${Array.from({ length: n }, (_, i) => `"k${i}":0`).join(',')}}`;
    expect(() => checkJsonShape(b(keys(100)))).not.toThrow();
    expect(() => checkJsonShape(b(keys(200)))).toThrow(/more than/);
  });

  it('tells escaped quotes from closing ones (even and odd runs of backslashes)', () => {
    // "a\\" closes after two backslashes; the [ that follows is structural.
    expect(() => checkJsonShape(b('["a\\\\",' + '['.repeat(MAX_JSON_DEPTH) + ']'), 8, 1000)).toThrow(
      /nests deeper/,
    );
    // "a\"[[[..." stays inside the string.
    expect(() => checkJsonShape(b('["a\\"' + '['.repeat(20) + '"]'))).not.toThrow();
    expect(() => checkJsonShape(b('["unterminated'))).toThrow(/unterminated/);
  });
});

describe('parseAgentJson', () => {
  it('returns a valid exec result', () => {
    const r = result({ stdout: 'hi\n', exitCode: 3 });
    expect(parseAgentJson(b(JSON.stringify(r)), validateExecResult)).toEqual(r);
  });

  it.each([
    ['bad JSON', '{"stdout": "x", "exitCode": ', /not valid JSON/],
    ['null', 'null', /\(root\) must be object/],
    [
      'a string exit code',
      JSON.stringify(result({ exitCode: 'abc' as unknown as number })),
      /exitCode must be integer/,
    ],
    ['an exit code out of range', JSON.stringify(result({ exitCode: 300 })), /exitCode must be <= 255/],
    [
      'a number as stdout',
      JSON.stringify(result({ stdout: 42 as unknown as string })),
      /stdout must be string/,
    ],
    [
      'an unknown encoding',
      JSON.stringify(result({ stdoutEncoding: 'latin1' as 'utf-8' })),
      /stdoutEncoding/,
    ],
    ['an extra field', JSON.stringify({ ...result(), podIP: '10.0.0.1' }), /unknown field/],
    ['a missing field', JSON.stringify({ ...result(), timedOut: undefined }), /required property 'timedOut'/],
  ])('refuses %s with a protocol error naming the rule, not the content', (_what, text, message) => {
    const err = (() => {
      try {
        parseAgentJson(b(text), validateExecResult);
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(err).toBeInstanceOf(AgentProtocolError);
    expect((err as Error).message).toMatch(message);
    expect((err as Error).message).not.toContain('10.0.0.1');
  });

  it('scans only answers over the threshold (a deep but small answer still fails its schema)', () => {
    const small = '['.repeat(100) + ']'.repeat(100);
    expect(small.length).toBeLessThan(SCAN_THRESHOLD_BYTES);
    expect(() => parseAgentJson(b(small), validateExecResult)).toThrow(/must be object/);
    const large = '['.repeat(SCAN_THRESHOLD_BYTES) + ']'.repeat(SCAN_THRESHOLD_BYTES);
    expect(() => parseAgentJson(b(large), validateExecResult)).toThrow(/nests deeper/);
  });

  it('validates the upload answer', () => {
    expect(parseAgentJson(b('{"path":"a","size":3}'), validateWriteResult)).toEqual({ path: 'a', size: 3 });
    expect(() => parseAgentJson(b('{"path":"a","size":-1}'), validateWriteResult)).toThrow(
      AgentProtocolError,
    );
  });
});

describe('output caps', () => {
  it('measures decoded bytes of utf-8 and base64 output', () => {
    expect(outputBytes('héllo', 'utf-8')).toBe(6);
    expect(outputBytes(Buffer.alloc(10).toString('base64'), 'base64')).toBe(10);
    expect(outputBytes(Buffer.alloc(11).toString('base64'), 'base64')).toBe(11);
  });

  it('refuses output over the cap', () => {
    expect(() => checkOutputCap('x'.repeat(100), 'utf-8', 100, 'stdout')).not.toThrow();
    expect(() => checkOutputCap('x'.repeat(101), 'utf-8', 100, 'stdout')).toThrow(/stdout is 101 bytes/);
    expect(() => checkOutputCap('é'.repeat(51), 'utf-8', 100, 'stderr')).toThrow(/stderr is 102 bytes/);
    expect(() => checkOutputCap(Buffer.alloc(101).toString('base64'), 'base64', 100, 'stdout')).toThrow(
      AgentProtocolError,
    );
  });
});
