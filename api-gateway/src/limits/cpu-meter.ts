/**
 * A fair share of the gateway's one event loop for each API key. Reading and checking what a
 * tenant's agents answer costs CPU that the tenant controls (12 MB in 40-byte chunks, 250,000
 * one-byte stream events, 12 MiB of escaped control characters), and every other tenant waits
 * while it is spent. Each key has a token bucket of CPU milliseconds: the time spent parsing its
 * answers is charged to it, and while it is in debt its agent connections are paused (TCP
 * backpressure, nothing is refused) until the debt is repaid. An honest key is far below the rate
 * (an `exec true` costs about 0.05 ms); a hostile one is slowed to its share.
 *
 * Work-conserving: a key pays for its debt only while another key is using the answer path too
 * (charged within the last CONTENDED_WINDOW_MS). Alone, it runs at the speed of the machine and
 * its debt is forgiven, so one tenant's large download through an idle gateway is not throttled
 * to a share nobody else claims; once another key shows up, the share applies from zero debt.
 */

/** A key counts as using the answer path for this long after its last charge. */
export const CONTENDED_WINDOW_MS = 1000;

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
    private readonly keyId: string,
    private readonly ratePerMs: number,
    private readonly burstMs: number,
    private readonly clock: { now: () => number; activity: Activity },
  ) {
    this.tokens = burstMs;
    this.at = clock.now();
  }

  charge(ms: number): number {
    const t = this.clock.now();
    this.tokens = Math.min(this.burstMs, this.tokens + (t - this.at) * this.ratePerMs) - ms;
    this.at = t;
    const { activity } = this.clock;
    const contended = activity.othersSince(this.keyId, t - CONTENDED_WINDOW_MS);
    activity.charged(this.keyId, t);
    if (this.tokens >= 0) return 0;
    if (!contended) {
      this.tokens = 0; // alone: no debt to repay later
      return 0;
    }
    return Math.ceil(-this.tokens / this.ratePerMs);
  }
}

/**
 * When keys last charged, enough to answer "has another key charged since T?" in O(1) per charge:
 * the latest charge, and the latest charge by any other key than that one.
 */
class Activity {
  private lastKey: string | undefined;
  private lastAt = -Infinity;
  private otherAt = -Infinity;

  charged(keyId: string, at: number): void {
    if (keyId !== this.lastKey) {
      this.otherAt = this.lastAt;
      this.lastKey = keyId;
    }
    this.lastAt = at;
  }

  /** Whether a key other than `keyId` charged at or after `since`. */
  othersSince(keyId: string, since: number): boolean {
    return (keyId === this.lastKey ? this.otherAt : this.lastAt) >= since;
  }
}

/** The meters of every key, made on first use. */
export class CpuMeters {
  private readonly meters = new Map<string, CpuMeter>();
  private readonly activity = new Activity();

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
      m = new KeyMeter(keyId, this.msPerSecond / 1000, this.burstMs, {
        now: this.now,
        activity: this.activity,
      });
      this.meters.set(keyId, m);
    }
    return m;
  }
}
