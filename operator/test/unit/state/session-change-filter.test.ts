import { describe, expect, it } from '@jest/globals';

import { SessionChangeFilter } from '../../../src/state/session-change-filter.js';

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

  it('queues a replay low: an unchanged session again, or a new key that is already Ready for its generation', () => {
    const f = new SessionChangeFilter();
    const ready = (observedGeneration: number, status = 'True'): Record<string, unknown> => ({
      status: { conditions: [{ type: 'Ready', status, observedGeneration }] },
    });
    // A new leader's first watch: settled sessions low, the others (a new one, one whose spec
    // changed since it was Ready, one not Ready) first.
    expect(f.classify('ADDED', 'ns/settled', { ...obj(), ...ready(1) })).toBe('low');
    expect(f.classify('ADDED', 'ns/new', obj())).toBe('normal');
    expect(f.classify('ADDED', 'ns/changed', { ...obj({ generation: 2 }), ...ready(1) })).toBe('normal');
    expect(f.classify('ADDED', 'ns/pending', { ...obj(), ...ready(1, 'False') })).toBe('normal');
    expect(f.classify('ADDED', 'ns/gone', { ...obj({ deletionTimestamp: 'x' }), ...ready(1) })).toBe(
      'normal',
    );
    // A re-watch replays the new one unchanged: low now; a real change stays normal.
    expect(f.classify('ADDED', 'ns/new', obj())).toBe('low');
    expect(f.classify('ADDED', 'ns/new', obj({ generation: 2 }))).toBe('normal');
    expect(f.classify('MODIFIED', 'ns/new', obj({ generation: 2 }))).toBeUndefined();
    expect(f.classify('DELETED', 'ns/new', obj())).toBe('normal');
  });
});
