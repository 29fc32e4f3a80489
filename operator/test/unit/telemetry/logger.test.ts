import { Writable } from 'node:stream';

import { describe, expect, it } from '@jest/globals';

import { createLogger, errorFields } from '../../../src/telemetry/logger.js';

describe('errorFields', () => {
  it('joins the cause chain and extracts the API status', () => {
    const api = Object.assign(new Error('HTTP-Code: 409'), {
      code: 409,
      body: JSON.stringify({
        kind: 'Status',
        reason: 'AlreadyExists',
        message: 'pods "sbs-a" already exists',
      }),
    });
    const err = new Error('create Pod sbs-a', { cause: api });
    expect(errorFields(err)).toEqual({
      error: 'create Pod sbs-a: pods "sbs-a" already exists',
      apiCode: 409,
      apiReason: 'AlreadyExists',
    });
  });

  it('handles non-errors and bodies that are not Status objects', () => {
    expect(errorFields('plain')).toEqual({ error: 'plain' });
    expect(errorFields(Object.assign(new Error('x'), { code: 502, body: '<html>' }))).toEqual({
      error: 'x',
      apiCode: 502,
      apiReason: undefined,
    });
  });
});

describe('createLogger: the platform line shape', () => {
  it('writes time, level, msg, service first, then trace ids from the context, then fields; redacts secret-named fields', () => {
    const out: string[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _enc, cb): void {
        out.push(chunk.toString());
        cb();
      },
    });
    const log = createLogger(
      'info',
      { identity: 'op-1' },
      { stream, context: () => ({ trace_id: 't', span_id: 's' }) },
    );
    log.info('created pod', { session: 'a', namespace: 'ns', token: 'hunter2' });
    log.debug('dropped');
    expect(out).toHaveLength(1);
    const line = JSON.parse(out[0]!) as Record<string, unknown>;
    expect(Object.keys(line)).toEqual([
      'time',
      'level',
      'msg',
      'service',
      'trace_id',
      'span_id',
      'identity',
      'session',
      'namespace',
      'token',
    ]);
    expect(line).toMatchObject({
      level: 'info',
      msg: 'created pod',
      service: 'sandbox-operator',
      token: '[redacted]',
    });
  });
});
