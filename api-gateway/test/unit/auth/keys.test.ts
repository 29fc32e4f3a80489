import { describe, expect, it } from '@jest/globals';

import { ApiKeys, hashKey } from '../../../src/auth/keys.js';

const plain = 'plain-key-0123456789abcdef';
const hashed = 'hashed-key-0123456789abcdef';

function file(keys: unknown[]): string {
  return JSON.stringify({ keys });
}

describe('ApiKeys', () => {
  const keys = ApiKeys.parse(
    file([
      { id: 'p', key: plain, namespaces: ['a'] },
      { id: 'h', sha256: hashKey(hashed).toUpperCase(), namespaces: ['a', 'b'], defaultNamespace: 'b' },
    ]),
    ['a', 'b'],
  );

  it('authenticates plain and hashed keys to their principals', () => {
    expect(keys.authenticate(plain)).toMatchObject({ keyId: 'p', defaultNamespace: 'a' });
    const h = keys.authenticate(hashed)!;
    expect([h.keyId, h.defaultNamespace, [...h.namespaces]]).toEqual(['h', 'b', ['a', 'b']]);
  });

  it('refuses unknown, empty and near-miss keys', () => {
    expect(keys.authenticate('')).toBeUndefined();
    expect(keys.authenticate(plain + ' ')).toBeUndefined();
    expect(keys.authenticate(hashKey(hashed))).toBeUndefined(); // the hash itself is not a key
  });

  it.each([
    ['not JSON', 'keys: []', /not valid JSON/],
    ['no keys', file([]), /must NOT have fewer than 1 items/],
    [
      'a short plain key',
      file([{ id: 'x', key: 'short', namespaces: ['a'] }]),
      /must NOT have fewer than 24 characters/,
    ],
    [
      'both key and sha256',
      file([{ id: 'x', key: plain, sha256: hashKey(plain), namespaces: ['a'] }]),
      /must match exactly one schema/,
    ],
    [
      'an unknown field',
      file([{ id: 'x', key: plain, namespaces: ['a'], admin: true }]),
      /additional properties/,
    ],
    [
      'a namespace the gateway does not serve',
      file([{ id: 'x', key: plain, namespaces: ['c'] }]),
      /does not serve: c/,
    ],
    [
      'a foreign default namespace',
      file([{ id: 'x', key: plain, namespaces: ['a'], defaultNamespace: 'b' }]),
      /defaultNamespace/,
    ],
    [
      'duplicate ids',
      file([
        { id: 'x', key: plain, namespaces: ['a'] },
        { id: 'x', key: hashed, namespaces: ['a'] },
      ]),
      /duplicate key id x/,
    ],
  ])('rejects a file with %s', (_what, text, message) => {
    expect(() => ApiKeys.parse(text, ['a', 'b'])).toThrow(message);
  });
});
