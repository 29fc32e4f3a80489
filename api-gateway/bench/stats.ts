/** Latency samples and throughput of one benchmark mode. */
import { RateLimitedError } from './agent-call.js';

/** 429s waited out (and their samples taken again), over the whole run. */
export const rateLimited = { count: 0 };

/**
 * Runs `call`; a 429 (RateLimitedError) is waited out and the call made again, up to 20 times;
 * `pace` runs before each attempt. Returns the milliseconds of the attempt that succeeded, never
 * counting the waits.
 */
async function timed(call: () => Promise<void>, pace?: () => Promise<void>): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    await pace?.();
    const t0 = process.hrtime.bigint();
    try {
      await call();
      return Number(process.hrtime.bigint() - t0) / 1e6;
    } catch (err) {
      if (!(err instanceof RateLimitedError) || attempt >= 20) throw err;
      rateLimited.count++;
      await new Promise((r) => setTimeout(r, err.retryAfterMs));
    }
  }
}

/** One mode's figures. */
export interface ModeFigures {
  mode: string;
  samples: number;
  p50Ms: number;
  p99Ms: number;
  meanMs: number;
  rps: number;
  concurrency: number;
  /** The mode's calls were paced (its req/s is the pace). */
  paced: boolean;
  /** CPU of the mode's serving process(es) per measured call, in microseconds (when measured). */
  cpuPerCallUs?: number;
}

/** The q-quantile (0..1) of sorted samples, nearest-rank. */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank]!;
}

/**
 * Runs `call` sequentially `iterations` times (after `warmup` unmeasured calls); returns ms per
 * call. `pace` (a paced mode) runs before each call, outside the timing.
 */
export async function latencies(
  call: () => Promise<void>,
  iterations: number,
  warmup: number,
  pace?: () => Promise<void>,
): Promise<number[]> {
  for (let i = 0; i < warmup; i++) await timed(call, pace);
  const out: number[] = [];
  for (let i = 0; i < iterations; i++) out.push(await timed(call, pace));
  return out.sort((a, b) => a - b);
}

/** Calls completed by `concurrency` callers looping for `durationMs`, and the seconds it took. */
export async function throughputRun(
  call: () => Promise<void>,
  concurrency: number,
  durationMs: number,
  pace?: () => Promise<void>,
): Promise<{ done: number; seconds: number }> {
  const end = Date.now() + durationMs;
  let done = 0;
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (Date.now() < end) {
        await timed(call, pace);
        done++;
      }
    }),
  );
  return { done, seconds: Number(process.hrtime.bigint() - started) / 1e9 };
}

/** One mode to measure: its call, sequential samples and unmeasured warm-up calls. */
export interface ModeSpec {
  mode: string;
  call: () => Promise<void>;
  iterations: number;
  warmup: number;
  /** Runs before each of the mode's slices (e.g. starts an attack that only this mode measures under). */
  before?: () => Promise<void>;
  /** Runs after each of the mode's slices. */
  after?: () => Promise<void>;
  /**
   * A paced mode (calls under a rate limit, e.g. the deployed gateway's per-key limit): runs
   * before each call, outside its timing. Its req/s is then the pace, not a capacity.
   */
  pace?: () => Promise<void>;
  /**
   * CPU time so far (ms) of the process(es) serving the mode (process-cpu.ts): read around each
   * of its slices, so its CPU per call counts only its own measured calls (not the warm-up).
   */
  cpuMs?: () => number;
}

/** CPU (ms) the mode's servers spent in its slices, and the calls made in them. */
interface CpuTally {
  ms: number;
  calls: number;
}

/** Runs one slice of a mode between its hooks; adds its CPU and `calls(result)` to `tally`. */
async function slice<T>(
  s: ModeSpec,
  tally: CpuTally,
  calls: (r: T) => number,
  run: () => Promise<T>,
): Promise<T> {
  await s.before?.();
  try {
    const c0 = s.cpuMs?.();
    const result = await run();
    if (c0 !== undefined) {
      tally.ms += s.cpuMs!() - c0;
      tally.calls += calls(result);
    }
    return result;
  } finally {
    await s.after?.();
  }
}

/**
 * Measures several modes interleaved: the samples of each mode are split into `rounds` slices,
 * and each round runs one slice of every mode (in an order rotated per round), first sequential
 * latencies, then the requests/second phase likewise split into `rounds` slices of
 * durationMs/rounds. On a shared machine the load drifts over seconds; interleaving exposes every
 * mode to the same drift, so the ratios between modes are steadier than with one block per mode.
 */
export async function measureInterleaved(
  specs: readonly ModeSpec[],
  o: { rounds: number; concurrency: number; durationMs: number },
): Promise<ModeFigures[]> {
  const rounds = Math.max(1, o.rounds);
  for (const s of specs) for (let i = 0; i < s.warmup; i++) await timed(s.call, s.pace);
  const samples = specs.map(() => [] as number[]);
  const runs = specs.map(() => ({ done: 0, seconds: 0 }));
  const cpu = specs.map((): CpuTally => ({ ms: 0, calls: 0 }));
  const order = (r: number): number[] => specs.map((_, i) => (i + r) % specs.length);
  for (let r = 0; r < rounds; r++) {
    for (const i of order(r)) {
      const s = specs[i]!;
      // Slice r of the samples: rounds * slice sums to exactly s.iterations.
      const n = Math.floor(((r + 1) * s.iterations) / rounds) - Math.floor((r * s.iterations) / rounds);
      samples[i]!.push(
        ...(await slice(
          s,
          cpu[i]!,
          (l) => l.length,
          () => latencies(s.call, n, 0, s.pace),
        )),
      );
    }
  }
  for (let r = 0; r < rounds; r++) {
    for (const i of order(r)) {
      const s = specs[i]!;
      const t = await slice(
        s,
        cpu[i]!,
        (r) => r.done,
        () => throughputRun(s.call, o.concurrency, o.durationMs / rounds, s.pace),
      );
      runs[i]!.done += t.done;
      runs[i]!.seconds += t.seconds;
    }
  }
  return specs.map((s, i) => {
    const lat = samples[i]!.sort((a, b) => a - b);
    return {
      mode: s.mode,
      samples: lat.length,
      p50Ms: quantile(lat, 0.5),
      p99Ms: quantile(lat, 0.99),
      meanMs: lat.reduce((a, b) => a + b, 0) / lat.length,
      rps: runs[i]!.done / runs[i]!.seconds,
      concurrency: o.concurrency,
      paced: s.pace !== undefined,
      ...(cpu[i]!.calls > 0 ? { cpuPerCallUs: (cpu[i]!.ms * 1000) / cpu[i]!.calls } : {}),
    };
  });
}

/** Prints the figures as a table plus the ratios the goals are stated in. */
export function report(rows: ModeFigures[], ratios: Array<[string, string, string]>): void {
  const fmt = (n: number): string => (Number.isFinite(n) ? n.toFixed(2) : 'n/a');
  const cpuCol = rows.some((r) => r.cpuPerCallUs !== undefined);
  console.log(
    `\nmode                          samples   p50 ms   p99 ms  mean ms   req/s (concurrency)${cpuCol ? '  CPU us/call (server)' : ''}`,
  );
  for (const r of rows) {
    const cpu = cpuCol
      ? `${(r.cpuPerCallUs === undefined ? '-' : r.cpuPerCallUs.toFixed(0)).padStart(8)}`
      : '';
    console.log(
      `${r.mode.padEnd(30)}${String(r.samples).padStart(7)}${fmt(r.p50Ms).padStart(9)}${fmt(r.p99Ms).padStart(9)}${fmt(r.meanMs).padStart(9)}` +
        `${fmt(r.rps).padStart(9)} (${r.concurrency}${r.paced ? ', paced' : ''})${cpu}`,
    );
  }
  if (rateLimited.count > 0) console.log(`429 answers waited out and retried so far: ${rateLimited.count}`);
  const by = new Map(rows.map((r) => [r.mode, r]));
  for (const [label, num, den] of ratios) {
    const a = by.get(num);
    const b = by.get(den);
    if (!a || !b) continue;
    // req/s of a paced mode is its pace: no ratio.
    const rps = a.paced || b.paced ? 'n/a (paced)' : `${fmt(a.rps / b.rps)}x`;
    const cpu =
      a.cpuPerCallUs !== undefined && b.cpuPerCallUs !== undefined
        ? `, CPU per call ${fmt(a.cpuPerCallUs / b.cpuPerCallUs)}x (${a.cpuPerCallUs.toFixed(0)} vs ${b.cpuPerCallUs.toFixed(0)} us)`
        : '';
    console.log(
      `${label}: p50 ${fmt(a.p50Ms / b.p50Ms)}x, p99 ${fmt(a.p99Ms / b.p99Ms)}x, req/s ${rps}${cpu}`,
    );
  }
}
