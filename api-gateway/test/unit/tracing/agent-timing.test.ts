import { describe, expect, it } from '@jest/globals';

import { parseAgentTiming } from '../../../src/tracing/agent-timing.js';

describe('parseAgentTiming (a sandbox writes this header: strict and bounded)', () => {
  it('reads the four metrics the agent sends', () => {
    expect(parseAgentTiming('queue;dur=0.412, run;dur=35.250, output;desc=1234, exit;desc=0')).toEqual({
      queueMs: 0.412,
      runMs: 35.25,
      outputBytes: 1234,
      exitCode: 0,
    });
  });

  it('reads the same values in any order and spacing', () => {
    expect(parseAgentTiming('exit;desc=7,output;desc=12,  run;dur=2.5,queue;dur=86400000')).toEqual({
      queueMs: 86_400_000,
      runMs: 2.5,
      outputBytes: 12,
      exitCode: 7,
    });
  });

  it('needs queue and run; output and exit are optional', () => {
    expect(parseAgentTiming('run;dur=1,queue;dur=2')).toEqual({ queueMs: 2, runMs: 1 });
    expect(parseAgentTiming('run;dur=1')).toBeUndefined();
    expect(parseAgentTiming(undefined)).toBeUndefined();
  });

  it.each([
    ['an unknown metric', 'queue;dur=1, run;dur=1, cmd;desc=1'],
    ['a repeated metric', 'queue;dur=1, run;dur=1, run;dur=2'],
    ['a negative duration', 'queue;dur=-1, run;dur=1'],
    ['a duration over a day', 'queue;dur=86400001, run;dur=1'],
    ['a duration as desc', 'queue;desc=1, run;dur=1'],
    ['a count as dur', 'queue;dur=1, run;dur=1, output;dur=5'],
    ['an exit status over 255', 'queue;dur=1, run;dur=1, exit;desc=256'],
    ['a fractional byte count', 'queue;dur=1, run;dur=1, output;desc=1.5'],
    ['quoted text', 'queue;dur=1, run;dur=1, exit;desc="0"'],
    ['exponent notation', 'queue;dur=1e3, run;dur=1'],
    ['an overlong header', `queue;dur=1, run;dur=1${' '.repeat(300)}`],
    [
      'the agent form with an exit status over 255',
      'queue;dur=1.000, run;dur=1.000, output;desc=0, exit;desc=256',
    ],
    [
      'the agent form with an unsafe byte count',
      'queue;dur=1.000, run;dur=1.000, output;desc=9007199254740993, exit;desc=0',
    ],
    [
      'the agent form with a duration over a day',
      'queue;dur=86400000.001, run;dur=1.000, output;desc=0, exit;desc=0',
    ],
  ])('refuses %s', (_what, value) => {
    expect(parseAgentTiming(value)).toBeUndefined();
  });
});
