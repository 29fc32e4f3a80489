import { describe, expect, it } from '@jest/globals';

import { keyString, parseKey } from '../../../src/controller/session-key.js';

describe('session keys', () => {
  it('round-trips namespace/name', () => {
    expect(parseKey(keyString({ namespace: 'ns', name: 'a' }))).toEqual({ namespace: 'ns', name: 'a' });
  });

  it.each(['', 'a', '/a', 'a/', 'a/b/c'])('rejects %p', (bad) => {
    expect(() => parseKey(bad)).toThrow(/malformed/);
  });
});
