import { describe, expect, it } from '@jest/globals';

import { AnswerReservation } from '../../../../src/exec/agent/answer-reservation.js';
import { ANSWER_MEMORY_FACTOR, UNCOUNTED_BYTES } from '../../../../src/limits/byte-budget.js';

/** A hold with `capacity` bytes that records what was taken. */
function hold(capacity: number): { tryTake: (n: number) => boolean; taken: number[] } {
  const taken: number[] = [];
  let left = capacity;
  return {
    taken,
    tryTake(n) {
      if (n > left) return false;
      left -= n;
      taken.push(n);
      return true;
    },
  };
}

describe('AnswerReservation', () => {
  it('takes nothing up to the uncounted size', () => {
    const h = hold(0);
    expect(new AnswerReservation(h).cover(UNCOUNTED_BYTES)).toBe(true);
    expect(h.taken).toEqual([]);
  });

  it('takes the factor times what the body grew by, once per size', () => {
    const h = hold(Infinity);
    const r = new AnswerReservation(h);
    expect(r.cover(UNCOUNTED_BYTES + 10)).toBe(true);
    expect(r.cover(UNCOUNTED_BYTES + 10)).toBe(true);
    expect(r.cover(UNCOUNTED_BYTES + 30)).toBe(true);
    expect(h.taken).toEqual([(UNCOUNTED_BYTES + 10) * ANSWER_MEMORY_FACTOR, 20 * ANSWER_MEMORY_FACTOR]);
  });

  it('refuses when the hold cannot take it, and keeps what it had covered', () => {
    const h = hold((UNCOUNTED_BYTES + 1) * ANSWER_MEMORY_FACTOR);
    const r = new AnswerReservation(h);
    expect(r.cover(UNCOUNTED_BYTES + 1)).toBe(true);
    expect(r.cover(UNCOUNTED_BYTES + 2)).toBe(false);
    expect(r.cover(UNCOUNTED_BYTES + 1)).toBe(true);
    expect(h.taken).toEqual([(UNCOUNTED_BYTES + 1) * ANSWER_MEMORY_FACTOR]);
  });
});
