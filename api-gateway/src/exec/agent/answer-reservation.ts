/**
 * The shared answer budget (ADR 0017) as the agent client sees it: a whole read asks its
 * reservation to cover the body as it grows, and knows nothing of the budget's rules (what is
 * uncounted, what a byte costs). The transport gives one reservation per read.
 */
import { ANSWER_MEMORY_FACTOR, UNCOUNTED_BYTES } from '../../limits/byte-budget.js';
import type { AnswerHold } from '../types.js';

/** What a body read whole takes its memory from. */
export interface BodyReservation {
  /** Covers a body of `bytes` so far; false (nothing more taken) when it cannot. */
  cover(bytes: number): boolean;
}

/**
 * A read's memory taken from the caller's response hold: a body over UNCOUNTED_BYTES takes
 * ANSWER_MEMORY_FACTOR times its size, as it arrives.
 */
export class AnswerReservation implements BodyReservation {
  /** Body bytes already covered. */
  private reserved = 0;

  constructor(private readonly hold: AnswerHold) {}

  cover(bytes: number): boolean {
    if (bytes <= UNCOUNTED_BYTES || bytes <= this.reserved) return true;
    if (!this.hold.tryTake((bytes - this.reserved) * ANSWER_MEMORY_FACTOR)) return false;
    this.reserved = bytes;
    return true;
  }
}
