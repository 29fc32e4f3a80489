import { describe, expect, it } from '@jest/globals';

import { errorFields } from '../../../src/telemetry/logger.js';

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
