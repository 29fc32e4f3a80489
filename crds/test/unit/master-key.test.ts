import { describe, expect, it } from '@jest/globals';

import { readMasterKeyFile } from '../../src/master-key.js';

describe('readMasterKeyFile', () => {
  it('returns the raw bytes, trailing newline included', () => {
    const key = Buffer.from(`${'k'.repeat(32)}\n`);
    expect(readMasterKeyFile('/f', () => key)).toEqual(key);
  });

  it('refuses keys shorter than 32 bytes', () => {
    expect(() => readMasterKeyFile('/f', () => Buffer.alloc(31))).toThrow(/31 bytes; at least 32/);
  });

  it('names the file when it cannot be read', () => {
    const err = (() => {
      try {
        readMasterKeyFile('/missing', () => {
          throw new Error('ENOENT');
        });
      } catch (e) {
        return e as Error;
      }
      return undefined;
    })();
    expect(err?.message).toBe('cannot read the master key file /missing');
    expect((err?.cause as Error).message).toBe('ENOENT');
  });
});
