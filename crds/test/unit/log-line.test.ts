import { describe, expect, it } from '@jest/globals';

import { formatLogLine } from '../../src/log-line.js';

const at = new Date('2026-12-06T08:00:00.123Z');

describe('formatLogLine: the one log line shape of the operator, gateway and agent', () => {
  it('starts with time, level, msg, service, then trace_id/span_id, then the fields', () => {
    const line = formatLogLine(
      { service: 'sandbox-operator', level: 'info', msg: 'created pod', time: at },
      { session: 's', namespace: 'ns', span_id: 'b', trace_id: 'a' },
    );
    expect(line).toBe(
      '{"time":"2026-12-06T08:00:00.123Z","level":"info","msg":"created pod","service":"sandbox-operator",' +
        '"trace_id":"a","span_id":"b","session":"s","namespace":"ns"}',
    );
  });

  it('drops fields that would redefine a leading one, and undefined values', () => {
    const line = JSON.parse(
      formatLogLine(
        { service: 'sandbox-agent', level: 'warn', msg: 'real', time: at },
        { msg: 'forged', level: 'error', service: 'x', time: 'then', extra: undefined, n: 1 },
      ),
    ) as Record<string, unknown>;
    expect(line).toEqual({
      time: '2026-12-06T08:00:00.123Z',
      level: 'warn',
      msg: 'real',
      service: 'sandbox-agent',
      n: 1,
    });
  });
});
