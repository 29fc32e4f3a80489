/** Per-key retry delays: exponential, capped, with jitter so retries of many keys spread out. */

/** Backoff parameters. */
export interface BackoffOptions {
  /** Delay after the first failure. */
  readonly baseMs: number;
  /** Cap of the delay. */
  readonly maxMs: number;
  /** Relative jitter: the delay is scaled by a factor drawn from [1 - jitter, 1 + jitter]. */
  readonly jitter: number;
}

/** The delay before retry number `attempt` (1 = after the first failure). `random` is in [0, 1). */
export function backoffDelay(
  attempt: number,
  opts: BackoffOptions,
  random: () => number = Math.random,
): number {
  const exp = opts.baseMs * 2 ** Math.min(Math.max(attempt - 1, 0), 30);
  const capped = Math.min(exp, opts.maxMs);
  const factor = 1 + opts.jitter * (2 * random() - 1);
  return Math.round(Math.min(Math.max(capped * factor, 0), opts.maxMs));
}
