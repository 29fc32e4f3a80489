import { describe, expect, it } from '@jest/globals';

import { deriveToken, safeEqual } from '../../src/token.js';

const key = Buffer.alloc(32, 7);

describe('deriveToken', () => {
  it('is deterministic and bound to namespace, name and uid', () => {
    const t = deriveToken(key, { namespace: 'ns', name: 'a', uid: 'u1' });
    expect(t).toMatch(/^[0-9a-f]{64}$/);
    expect(deriveToken(key, { namespace: 'ns', name: 'a', uid: 'u1' })).toBe(t);
    expect(deriveToken(key, { namespace: 'ns', name: 'a', uid: 'u2' })).not.toBe(t);
    expect(deriveToken(key, { namespace: 'ns2', name: 'a', uid: 'u1' })).not.toBe(t);
  });

  it('refuses short keys and missing uids', () => {
    expect(() => deriveToken(Buffer.alloc(8), { namespace: 'n', name: 'a', uid: 'u' })).toThrow(
      /at least 32/,
    );
    expect(() => deriveToken(key, { namespace: 'n', name: 'a', uid: '' })).toThrow(/UID/);
  });
});

describe('safeEqual', () => {
  it('compares by content and length', () => {
    expect(safeEqual('abc', 'abc')).toBe(true);
    expect(safeEqual('abc', 'abd')).toBe(false);
    expect(safeEqual('abc', 'abcd')).toBe(false);
  });
});
