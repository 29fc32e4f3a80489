/**
 * Paces calls under a rate: each call of any of its users takes the next free slot, slots
 * 1/perSecond apart. The deployed gateway limits each API key (GATEWAY_KEY_MAX_REQUESTS_PER_SECOND,
 * default 100, a fixed one-second window): the cluster bench's calls through it go at most at this
 * pace (default 90/s), so they are measured, not refused (issue 33: the bench crashed on a 429).
 */

/** Returns the pace function: resolves when the caller's slot has come. */
export function pacer(perSecond: number): () => Promise<void> {
  if (!(perSecond > 0)) throw new Error(`pace must be a positive rate, got ${perSecond}`);
  const gapNs = BigInt(Math.ceil(1e9 / perSecond));
  let next = process.hrtime.bigint();
  return async () => {
    const now = process.hrtime.bigint();
    const at = next > now ? next : now;
    next = at + gapNs;
    const waitMs = Number(at - now) / 1e6;
    if (waitMs > 0) await new Promise((r) => setTimeout(r, waitMs));
  };
}
