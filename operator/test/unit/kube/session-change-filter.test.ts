import { describe, expect, it } from '@jest/globals';

import { SessionChangeFilter } from '../../../src/kube/session-change-filter.js';

const obj = (over: Record<string, unknown> = {}): { metadata: Record<string, unknown> } => ({
  metadata: { uid: 'u1', generation: 1, annotations: {}, ...over },
});

describe('SessionChangeFilter', () => {
  it('passes ADDED and DELETED always, and MODIFIED only when the reconcile could act differently', () => {
    const f = new SessionChangeFilter();
    expect(f.admit('ADDED', 'ns/a', obj())).toBe(true);
    expect(f.admit('ADDED', 'ns/a', obj())).toBe(true);
    expect(f.admit('MODIFIED', 'ns/a', obj())).toBe(false);
    expect(f.admit('MODIFIED', 'ns/a', obj({ generation: 2 }))).toBe(true);
    expect(
      f.admit('MODIFIED', 'ns/a', obj({ generation: 2, annotations: { 'sandbox.dev/last-activity': 'x' } })),
    ).toBe(true);
    expect(
      f.admit(
        'MODIFIED',
        'ns/a',
        obj({ generation: 2, annotations: { 'sandbox.dev/last-activity': 'x', other: 'y' } }),
      ),
    ).toBe(false);
    expect(
      f.admit(
        'MODIFIED',
        'ns/a',
        obj({ generation: 2, annotations: { 'sandbox.dev/last-activity': 'x' }, deletionTimestamp: 'now' }),
      ),
    ).toBe(true);
    expect(f.admit('DELETED', 'ns/a', obj())).toBe(true);
    expect(f.size).toBe(0);
  });

  it('passes a MODIFIED event of a key it never saw, and a re-created session (new UID)', () => {
    const f = new SessionChangeFilter();
    expect(f.admit('MODIFIED', 'ns/b', obj())).toBe(true);
    expect(f.admit('MODIFIED', 'ns/b', obj({ uid: 'u2' }))).toBe(true);
  });
});
