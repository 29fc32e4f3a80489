/**
 * WatchLag: a version a LIST showed must reach the watch-fed cache by the next LIST of the scope;
 * a watch that is only behind, a session changed again between the LISTs, or one recreated under
 * the same name is not a stopped watch.
 */
import { describe, expect, it } from '@jest/globals';

import { WatchLag, type ListedVersion, type SeenVersion } from '../../../src/state/watch-lag.js';

const item = (key: string, rv: number, uid = `uid-${key}`): ListedVersion => ({ key, uid, rv: BigInt(rv) });

/** What the watch delivered: key -> [uid, rv]. */
function seenFrom(delivered: Record<string, [string, number]>): (key: string) => SeenVersion {
  return (key) => {
    const d = delivered[key];
    return d && { uid: d[0], rv: BigInt(d[1]) };
  };
}

describe('WatchLag', () => {
  it('reports nothing while the watch keeps up', () => {
    const lag = new WatchLag();
    const seen = seenFrom({ a: ['uid-a', 5], b: ['uid-b', 9] });
    expect(lag.afterList('', [item('a', 5), item('b', 8)], seen)).toEqual([]);
    expect(lag.afterList('', [item('a', 5), item('b', 8)], seen)).toEqual([]);
  });

  it('a watch that was behind at one LIST and caught up by the next is not stale', () => {
    const lag = new WatchLag();
    expect(lag.afterList('', [item('a', 7)], seenFrom({ a: ['uid-a', 5] }))).toEqual([]);
    expect(lag.afterList('', [item('a', 7)], seenFrom({ a: ['uid-a', 7] }))).toEqual([]);
  });

  it('reports a version listed a whole period ago that the watch never delivered', () => {
    const lag = new WatchLag();
    const stuck = seenFrom({ a: ['uid-a', 5], b: ['uid-b', 3] });
    expect(lag.afterList('', [item('a', 7), item('b', 3)], stuck)).toEqual([]);
    expect(lag.afterList('', [item('a', 7), item('b', 3)], stuck)).toEqual(['a']);
  });

  it('reports a session created after the watch stopped (never seen at all)', () => {
    const lag = new WatchLag();
    const none = seenFrom({});
    expect(lag.afterList('team-a', [item('team-a/new', 11)], none)).toEqual([]);
    expect(lag.afterList('team-a', [item('team-a/new', 11)], none)).toEqual(['team-a/new']);
  });

  it('a session changed again between the LISTs counts only if the earlier version never arrived', () => {
    const lag = new WatchLag();
    expect(lag.afterList('', [item('a', 7)], seenFrom({ a: ['uid-a', 5] }))).toEqual([]);
    // The watch delivered 7 (listed before) but not yet 12: behind, not stopped.
    expect(lag.afterList('', [item('a', 12)], seenFrom({ a: ['uid-a', 7] }))).toEqual([]);
    // 12 was listed a period ago and is still missing: stopped.
    expect(lag.afterList('', [item('a', 15)], seenFrom({ a: ['uid-a', 7] }))).toEqual(['a']);
  });

  it('a session recreated under the same name is judged by its new uid only', () => {
    const lag = new WatchLag();
    expect(lag.afterList('', [item('a', 7, 'old')], seenFrom({}))).toEqual([]);
    expect(lag.afterList('', [item('a', 20, 'new')], seenFrom({ a: ['old', 7] }))).toEqual([]);
    expect(lag.afterList('', [item('a', 20, 'new')], seenFrom({ a: ['new', 20] }))).toEqual([]);
  });

  it('keeps each LIST scope apart', () => {
    const lag = new WatchLag();
    const none = seenFrom({});
    expect(lag.afterList('a', [item('a/x', 3)], none)).toEqual([]);
    expect(lag.afterList('b', [item('b/y', 4)], none)).toEqual([]);
    expect(lag.afterList('b', [item('b/y', 4)], seenFrom({ 'b/y': ['uid-b/y', 4] }))).toEqual([]);
    expect(lag.afterList('a', [item('a/x', 3)], none)).toEqual(['a/x']);
  });
});
