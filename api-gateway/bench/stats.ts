/** Latency samples and throughput of one benchmark mode. */

/** One mode's figures. */
export interface ModeFigures {
  mode: string;
  samples: number;
  p50Ms: number;
  p99Ms: number;
  meanMs: number;
  rps: number;
  concurrency: number;
}

/** The q-quantile (0..1) of sorted samples, nearest-rank. */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank]!;
}

/** Runs `call` sequentially `iterations` times (after `warmup` unmeasured calls); returns ms per call. */
export async function latencies(
  call: () => Promise<void>,
  iterations: number,
  warmup: number,
): Promise<number[]> {
  for (let i = 0; i < warmup; i++) await call();
  const out: number[] = [];
  for (let i = 0; i < iterations; i++) {
    const t0 = process.hrtime.bigint();
    await call();
    out.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return out.sort((a, b) => a - b);
}

/** Calls per second with `concurrency` callers looping for `durationMs`. */
export async function throughput(
  call: () => Promise<void>,
  concurrency: number,
  durationMs: number,
): Promise<number> {
  const end = Date.now() + durationMs;
  let done = 0;
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (Date.now() < end) {
        await call();
        done++;
      }
    }),
  );
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return done / seconds;
}

/** Measures one mode. */
export async function measure(
  mode: string,
  call: () => Promise<void>,
  o: { iterations: number; warmup: number; concurrency: number; durationMs: number },
): Promise<ModeFigures> {
  const lat = await latencies(call, o.iterations, o.warmup);
  const rps = await throughput(call, o.concurrency, o.durationMs);
  const meanMs = lat.reduce((a, b) => a + b, 0) / lat.length;
  return {
    mode,
    samples: lat.length,
    p50Ms: quantile(lat, 0.5),
    p99Ms: quantile(lat, 0.99),
    meanMs,
    rps,
    concurrency: o.concurrency,
  };
}

/** Prints the figures as a table plus the ratios the goals are stated in. */
export function report(rows: ModeFigures[], ratios: Array<[string, string, string]>): void {
  const fmt = (n: number): string => (Number.isFinite(n) ? n.toFixed(2) : 'n/a');
  console.log('\nmode                          samples   p50 ms   p99 ms  mean ms   req/s (concurrency)');
  for (const r of rows) {
    console.log(
      `${r.mode.padEnd(30)}${String(r.samples).padStart(7)}${fmt(r.p50Ms).padStart(9)}${fmt(r.p99Ms).padStart(9)}${fmt(r.meanMs).padStart(9)}` +
        `${fmt(r.rps).padStart(9)} (${r.concurrency})`,
    );
  }
  const by = new Map(rows.map((r) => [r.mode, r]));
  for (const [label, num, den] of ratios) {
    const a = by.get(num);
    const b = by.get(den);
    if (a && b)
      console.log(
        `${label}: p50 ${fmt(a.p50Ms / b.p50Ms)}x, p99 ${fmt(a.p99Ms / b.p99Ms)}x, req/s ${fmt(a.rps / b.rps)}x`,
      );
  }
}
