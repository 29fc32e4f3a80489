import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';

import { Tombstones } from '../../../src/sessions/tombstones.js';
import { ChangeWaiters } from '../../../src/sessions/waiters.js';

describe('ChangeWaiters', () => {
  // Fake timers: a waiter that settles while no time passes was woken by notify or abort, not by
  // its timeout; setImmediate stays real to let the promise callbacks run.
  beforeEach(() => {
    jest.useFakeTimers({ doNotFake: ['setImmediate'] });
  });
  afterEach(() => {
    jest.useRealTimers();
  });
  const settle = (): Promise<void> => new Promise((r) => setImmediate(r));

  it('wakes the waiters of a key on notify, not those of other keys', async () => {
    const w = new ChangeWaiters();
    const woke: string[] = [];
    void w.wait('b', 5000).then(() => woke.push('b'));
    void w.wait('a', 5000).then(() => woke.push('a'));
    w.notify('a');
    await settle();
    expect(woke).toEqual(['a']);
    expect(w.size).toBe(1);
    w.releaseAll();
    await settle();
    expect([woke, w.size]).toEqual([['a', 'b'], 0]);
  });

  it('resolves at its timeout, not before, and at once on abort', async () => {
    const w = new ChangeWaiters();
    const woke: string[] = [];
    void w.wait('a', 30).then(() => woke.push('timeout'));
    await jest.advanceTimersByTimeAsync(29);
    expect(woke).toEqual([]);
    await jest.advanceTimersByTimeAsync(1);
    expect(woke).toEqual(['timeout']);
    expect(w.size).toBe(0);
    const ac = new AbortController();
    void w.wait('a', 5000, ac.signal).then(() => woke.push('abort'));
    await settle();
    expect(woke).toEqual(['timeout']);
    ac.abort();
    await settle();
    expect(woke).toEqual(['timeout', 'abort']);
    expect(w.size).toBe(0);
  });
});

describe('Tombstones', () => {
  it('remembers deletions until the name is seen again or the entry is old', () => {
    let now = 0;
    const t = new Tombstones(() => now);
    t.add('ns', 'a', { uid: 'u', reason: 'IdleTimeout', deletedAt: new Date(0) });
    expect(t.get('ns', 'a')?.reason).toBe('IdleTimeout');
    now = 2 * 60 * 60 * 1000;
    expect(t.get('ns', 'a')).toBeUndefined();
    t.add('ns', 'b', { uid: 'u', reason: 'Deleted', deletedAt: new Date(now) });
    t.delete('ns', 'b');
    expect(t.get('ns', 'b')).toBeUndefined();
  });
});
