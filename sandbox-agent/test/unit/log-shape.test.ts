import { describe, expect, it } from '@jest/globals';

import { createLogger, withFields } from '../../src/log.js';

describe('agent log lines: the platform line shape', () => {
  it('start with time, level, msg, service, then trace ids, then the fields; below the level: nothing', () => {
    const lines: string[] = [];
    const log = withFields(
      createLogger('info', (l) => lines.push(l)),
      { trace_id: 't', span_id: 's' },
    );
    log.info('exec done', { exitCode: 0, durationMs: 3 });
    log.debug('dropped');
    expect(lines).toHaveLength(1);
    expect(lines[0]!.endsWith('\n')).toBe(true);
    const line = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(Object.keys(line)).toEqual([
      'time',
      'level',
      'msg',
      'service',
      'trace_id',
      'span_id',
      'exitCode',
      'durationMs',
    ]);
    expect(line).toMatchObject({ level: 'info', msg: 'exec done', service: 'sandbox-agent' });
    expect(Number.isNaN(Date.parse(String(line.time)))).toBe(false);
  });
});
