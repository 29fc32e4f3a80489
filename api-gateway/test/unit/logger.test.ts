import { describe, expect, it, jest } from '@jest/globals';
import { Writable } from 'node:stream';
import winston from 'winston';

import { LOG_BATCH_MS, WinstonFastifyLogger, createWinston, flushLogs } from '../../src/logger.js';

/** A winston logger writing JSON lines into `out`. */
function rawWinston(): { w: winston.Logger; out: string[] } {
  const out: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb): void {
      out.push(chunk.toString());
      cb();
    },
  });
  const w = winston.createLogger({
    level: 'debug',
    format: winston.format.json(),
    transports: [new winston.transports.Stream({ stream })],
  });
  return { w, out };
}

function capture(): { logger: WinstonFastifyLogger; lines: () => Array<Record<string, unknown>> } {
  const { w, out } = rawWinston();
  return {
    logger: new WinstonFastifyLogger(w),
    lines: () => out.map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

describe('WinstonFastifyLogger', () => {
  it('accepts pino call shapes and keeps structured fields', () => {
    const { logger, lines } = capture();
    logger.info('plain');
    logger.warn({ session: 's', namespace: 'ns' }, 'with fields');
    logger.error(new Error('boom'), 'failed');
    logger.child({ keyId: 'k' }).debug({ a: 1 }, 'child');
    logger.trace('trace goes to debug');
    expect(lines()).toEqual([
      { level: 'info', message: 'plain' },
      { level: 'warn', message: 'with fields', session: 's', namespace: 'ns' },
      expect.objectContaining({
        level: 'error',
        message: 'failed',
        err: expect.objectContaining({ message: 'boom' }),
      }),
      { level: 'debug', message: 'child', a: 1, keyId: 'k' },
      { level: 'debug', message: 'trace goes to debug' },
    ]);
  });

  it('adds the fields of nested children (the innermost wins) and keeps a child level its own', () => {
    const { logger, lines } = capture();
    const a = logger.child({ reqId: 'r1', who: 'outer' });
    a.child({ who: 'inner', extra: 1 }).info({ x: 2 }, 'nested');
    a.info('outer');
    const quiet = logger.child({ reqId: 'r2' });
    quiet.level = 'warn';
    quiet.info('dropped');
    quiet.child({ sub: true }).info('dropped too');
    logger.info('root still at debug');
    expect(lines()).toEqual([
      { level: 'info', message: 'nested', reqId: 'r1', who: 'inner', extra: 1, x: 2 },
      { level: 'info', message: 'outer', reqId: 'r1', who: 'outer' },
      { level: 'info', message: 'root still at debug' },
    ]);
    expect(logger.level).toBe('debug');
  });

  // A child writes through the root (no winston child per request: fastify makes a child per
  // request); its lines are byte for byte what a winston child of the same bindings writes,
  // including a message with a `%` (winston's format tokens) and bindings winston reads itself.
  it('writes a child line exactly as a winston child of the same bindings would', () => {
    const cases: Array<[Record<string, unknown>, Record<string, unknown>, string]> = [
      [{ reqId: 'r1' }, { keyId: 'k', ms: 3 }, 'exec'],
      [{ reqId: 'r2', keyId: 'outer' }, { keyId: 'inner' }, 'the inner field wins'],
      [{ reqId: 'r3' }, { a: 1 }, '100% done, %s left'],
      [{ message: 'bound' }, { a: 1 }, 'line'],
    ];
    for (const [bindings, meta, message] of cases) {
      const ours = rawWinston();
      new WinstonFastifyLogger(ours.w).child(bindings).info(meta, message);
      const theirs = rawWinston();
      theirs.w.child(bindings).info(message, meta);
      expect(ours.out).toEqual(theirs.out);
    }
  });

  it('logs only method and url of a request object (no headers, so no API keys)', () => {
    const { logger, lines } = capture();
    logger.info({ req: { method: 'GET', url: '/x', headers: { authorization: 'Bearer secret' } } }, 'req');
    expect(JSON.stringify(lines())).not.toContain('secret');
  });
});

describe('createWinston (batched writes)', () => {
  function batched(): { w: winston.Logger; writes: string[] } {
    const writes: string[] = [];
    return { w: createWinston('info', { write: (text) => writes.push(text) }), writes };
  }
  const messages = (writes: string[]): unknown[] =>
    writes
      .join('')
      .split('\n')
      .filter(Boolean)
      .map((l) => (JSON.parse(l) as { msg: string }).msg);

  it('writes info lines together after LOG_BATCH_MS, one write per batch, in order', () => {
    jest.useFakeTimers();
    try {
      const { w, writes } = batched();
      w.info('a');
      w.info('b');
      w.debug('not at info');
      expect(writes).toEqual([]);
      jest.advanceTimersByTime(LOG_BATCH_MS);
      expect(writes).toHaveLength(1);
      expect(messages(writes)).toEqual(['a', 'b']);
      expect(writes[0]).toMatch(
        /^\{"time":"[^"]+","level":"info","msg":"a","service":"sandbox-api-gateway"\}\n/,
      );
    } finally {
      jest.useRealTimers();
    }
  });

  it('writes a warn or error line at once, after the pending lines', () => {
    const { w, writes } = batched();
    w.info('pending');
    w.warn('now');
    expect(messages(writes)).toEqual(['pending', 'now']);
    w.error('also now');
    expect(messages(writes)).toEqual(['pending', 'now', 'also now']);
  });

  it('flushLogs writes what is pending (exit)', () => {
    const { w, writes } = batched();
    w.info('last words');
    flushLogs(w);
    expect(messages(writes)).toEqual(['last words']);
  });
});
