import { describe, expect, it } from '@jest/globals';

import { causeMessage } from '../../../src/plugins/errors.js';

describe('causeMessage', () => {
  it('takes the message of an Error', () => {
    expect(causeMessage(new Error('connect ECONNREFUSED'))).toBe('connect ECONNREFUSED');
  });

  it('takes the message of a non-Error event (a WebSocket ErrorEvent from pods/exec)', () => {
    const errorEvent = { type: 'error', message: 'Unexpected server response: 403', target: {} };
    expect(causeMessage(errorEvent)).toBe('Unexpected server response: 403');
  });

  it('renders other causes and leaves an absent cause absent', () => {
    expect(causeMessage('plain')).toBe('plain');
    expect(causeMessage({ message: 42 })).toBe('{"message":42}');
    expect(causeMessage(undefined)).toBeUndefined();
  });
});
