import { describe, expect, it } from '@jest/globals';

import { checkWorkspacePath } from '../../src/routes/files/path.js';

describe('checkWorkspacePath', () => {
  it('normalizes empty and "." segments', () => {
    expect(checkWorkspacePath('a//./b/c.txt')).toBe('a/b/c.txt');
  });

  it.each([
    ['../etc/passwd', 'path-forbidden'],
    ['a/../../b', 'path-forbidden'],
    ['a/..', 'path-forbidden'],
    ['/etc/passwd', 'path-forbidden'],
    ['a\0b', 'invalid-request'],
    ['./', 'invalid-request'],
  ])('refuses %j with %s', (path, slug) => {
    let err: unknown;
    try {
      checkWorkspacePath(path);
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ slug });
  });
});
