/**
 * A fair share of the gateway's one event loop for each API key. Reading and checking what a
 * tenant's agents answer costs CPU that the tenant controls (12 MB in 40-byte chunks, 250,000
 * one-byte stream events, 12 MiB of escaped control characters), and every other tenant waits
 * while it is spent. Each key has a token bucket of CPU milliseconds: the time spent parsing its
 * answers is charged to it, and while it is in debt its agent connections are paused (TCP
 * backpressure, nothing is refused) until the debt is repaid. An honest key is far below the rate
 * (an `exec true` costs about 0.05 ms); a hostile one is slowed to its share.
 */

/** The meter of one key: charge CPU time, learn how long to wait. */
export interface CpuMeter {
  /** Charges `ms` of CPU; returns the milliseconds to wait before more work (0: none). */
  charge(ms: number): number;
}

/** A meter that never asks to wait (no limit configured, or a caller without a key). */
export const UNMETERED: CpuMeter = { charge: () => 0 };

class KeyMeter implements CpuMeter {
  private tokens: number;
  private at: number;

  constructor(
    private readonly ratePerMs: number,
    private readonly burstMs: number,
    private readonly now: () => number,
  ) {
    this.tokens = burstMs;
    this.at = now();
  }

  charge(ms: number): number {
    const t = this.now();
    this.tokens = Math.min(this.burstMs, this.tokens + (t - this.at) * this.ratePerMs) - ms;
    this.at = t;
    return this.tokens >= 0 ? 0 : Math.ceil(-this.tokens / this.ratePerMs);
  }
}

/** The meters of every key, made on first use. */
export class CpuMeters {
  private readonly meters = new Map<string, CpuMeter>();

  /**
   * @param msPerSecond CPU milliseconds per second a key may use for its answers (0: no limit)
   * @param burstMs how much may be used at once (the bucket's size)
   */
  constructor(
    private readonly msPerSecond: number,
    private readonly burstMs: number = msPerSecond,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** The meter of a key. */
  forKey(keyId: string): CpuMeter {
    if (this.msPerSecond === 0) return UNMETERED;
    let m = this.meters.get(keyId);
    if (!m) {
      m = new KeyMeter(this.msPerSecond / 1000, this.burstMs, this.now);
      this.meters.set(keyId, m);
    }
    return m;
  }
}
