import { describe, expect, it } from '@jest/globals';

import { Tombstones } from '../../../src/sessions/tombstones.js';
import { ChangeWaiters } from '../../../src/sessions/waiters.js';

describe('ChangeWaiters', () => {
  it('wakes the waiters of a key on notify, not those of other keys', async () => {
    const w = new ChangeWaiters();
    let other = false;
    void w.wait('b', 5000).then(() => (other = true));
    const started = Date.now();
    const waiting = w.wait('a', 5000);
    setTimeout(() => w.notify('a'), 20);
    await waiting;
    expect(Date.now() - started).toBeLessThan(1000);
    expect(other).toBe(false);
    expect(w.size).toBe(1);
    w.releaseAll();
    await new Promise((r) => setImmediate(r));
    expect([other, w.size]).toEqual([true, 0]);
  });

  it('resolves on timeout and on abort', async () => {
    const w = new ChangeWaiters();
    const started = Date.now();
    await w.wait('a', 30);
    expect(Date.now() - started).toBeGreaterThanOrEqual(25);
    const ac = new AbortController();
    const aborted = w.wait('a', 5000, ac.signal);
    ac.abort();
    await aborted;
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
