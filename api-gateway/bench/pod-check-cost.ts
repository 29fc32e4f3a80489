/**
 * The Pod identity check by itself (sessions/pod-identity.ts dialState, on vs off), timed in a loop
 * over the bench session and its Pod as the caches hold them: the CPU it adds to every dial, in
 * nanoseconds, next to the end-to-end exec p50 ratio that includes it. Not a test: printed figures.
 */
import { dialState, type DialPolicy } from '../src/sessions/pod-identity.js';
import { readySession, StaticStore } from './static-store.js';

/** Nanoseconds per dialState call with the check on and off (median of `rounds` loops of `calls`). */
export function podCheckCost(calls = 200_000, rounds = 7): { onNs: number; offNs: number } {
  const session = readySession('bench', 'bench', 'bench-uid', '127.0.0.1');
  const store = new StaticStore([session]);
  const policy = (podIdentityCheck: boolean): DialPolicy => ({
    address: { allowLoopback: true },
    podIdentityCheck,
  });
  const loop = (p: DialPolicy): number => {
    let ready = 0;
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < calls; i++) if (dialState(session, store, p).kind === 'ready') ready++;
    const ns = Number(process.hrtime.bigint() - t0) / calls;
    if (ready !== calls) throw new Error(`the bench session was not dialable (${ready}/${calls})`);
    return ns;
  };
  const on: number[] = [];
  const off: number[] = [];
  // Interleaved, after one unmeasured round each (JIT warm-up).
  loop(policy(true));
  loop(policy(false));
  for (let r = 0; r < rounds; r++) {
    on.push(loop(policy(true)));
    off.push(loop(policy(false)));
  }
  const median = (xs: number[]): number => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  return { onNs: median(on), offNs: median(off) };
}
