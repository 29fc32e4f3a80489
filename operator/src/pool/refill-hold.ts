/**
 * Holds a pool's reconcile back while one of its warm Pods is being claimed, and for a short
 * settle time after (docs/adr/0016-warm-pools.md, "Claim latency").
 *
 * A claim takes a warm Pod from the pool, and the Pod informer's echo of the claim patch woke the
 * pool reconcile at once: it created the replacement Pod and patched the pool's status while the
 * claim's bind call and the session's status write were still under way. On a small node that Pod
 * create (admission, scheduling, then the kubelet and the network policy controller reacting to a
 * new Pod) and the extra write compete for the API server and the CPUs with exactly the calls the
 * new session waits for. Measured on the local node (2 CPUs, make bench-pool --batch 1, 30 warm
 * claims each, 2026-12-02, load 4-9 in both runs): with the refill overlapping, the bind call took
 * p50 79 ms and the status write p50 38 ms; held back, 20 ms and 15 ms. So the refill waits until no claim of the
 * pool is in flight and SETTLE_MS have passed since the last one ended (the session's status write
 * and the gateway's first call follow the bind), but never more than MAX_HOLD_MS at a stretch:
 * under a steady stream of claims the pool still refills.
 *
 * Pure state; time comes in as an argument.
 */

/** How long after a pool's last claim ended its reconcile still waits. */
export const SETTLE_MS = 150;
/** Longest a pool's reconcile is held in one stretch, however many claims follow each other. */
export const MAX_HOLD_MS = 1000;

interface PoolHold {
  /** Claims of the pool in flight. */
  claiming: number;
  /** When the last claim ended (ms), or undefined while one has never ended. */
  endedAt?: number;
  /** When the current stretch of holding began (the first pass that was held). */
  heldSince?: number;
}

/** Per-pool claim bookkeeping and the hold verdict. */
export class RefillHold {
  private readonly pools = new Map<string, PoolHold>();

  constructor(
    private readonly settleMs = SETTLE_MS,
    private readonly maxHoldMs = MAX_HOLD_MS,
  ) {}

  /** A claim of the pool started. */
  claimStarted(pool: string): void {
    const hold = this.pools.get(pool) ?? { claiming: 0 };
    hold.claiming++;
    this.pools.set(pool, hold);
  }

  /** A claim of the pool ended (bound, lost or failed) at `nowMs`. */
  claimEnded(pool: string, nowMs: number): void {
    const hold = this.pools.get(pool);
    if (!hold) return;
    hold.claiming = Math.max(0, hold.claiming - 1);
    hold.endedAt = nowMs;
  }

  /**
   * How long the pool's reconcile should wait before it runs (0: run now). A pass that is let
   * through ends the current stretch, so the next claim can hold the pool again.
   */
  holdMs(pool: string, nowMs: number): number {
    const hold = this.pools.get(pool);
    if (!hold) return 0;
    const settling = hold.endedAt === undefined ? 0 : hold.endedAt + this.settleMs - nowMs;
    const wait = hold.claiming > 0 ? this.settleMs : settling;
    if (wait > 0) {
      hold.heldSince ??= nowMs;
      const left = hold.heldSince + this.maxHoldMs - nowMs;
      if (left > 0) return Math.min(wait, left);
    }
    if (hold.claiming > 0) hold.heldSince = undefined;
    else this.pools.delete(pool);
    return 0;
  }

  /** Forgets a pool (deleted). */
  forget(pool: string): void {
    this.pools.delete(pool);
  }

  /** Pools with bookkeeping (tests). */
  get size(): number {
    return this.pools.size;
  }
}
