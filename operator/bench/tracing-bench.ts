/**
 * What tracing costs a reconcile: the real reconcile() of a provisioned, Ready session (the steady
 * state: every phase runs, nothing is written) over in-memory stores, through the work queue's
 * handler as main.ts wires it, in three modes, interleaved round by round so machine load hits
 * all three alike:
 *
 *   off      tracing off: the handler and the phases unwrapped (what runs by default)
 *   sampled  tracing on, sampler 100%, spans exported over OTLP/HTTP (protobuf) in batches to a
 *            sink on loopback that answers 200 (a stand-in collector)
 *   dropped  tracing on, sampler 0% (spans made but not recorded)
 *
 * Prints per mode the median over rounds of the mean time per reconcile, and the ratio to off.
 * Usage (make bench-operator-tracing): run.mjs --reconciles 20000 --rounds 7
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';

import { reconcile } from '../src/controller/reconcile.js';
import type { ControllerDeps } from '../src/controller/scope.js';
import { startTracing, type Tracing } from '../src/telemetry/tracing.js';
import type { TracingConfig } from '@sandbox-platform/api';
import { FakeCluster } from '../test/fakes/fake-cluster.js';
import { FakeClock, controllerDeps } from '../test/fakes/fakes.js';
import { podView, ready } from '../test/fixtures/pods.js';
import { session } from '../test/fixtures/sessions.js';

const { values } = parseArgs({
  options: { reconciles: { type: 'string', default: '20000' }, rounds: { type: 'string', default: '7' } },
});
const RECONCILES = Number(values.reconciles);
const ROUNDS = Number(values.rounds);
const KEY = { namespace: 'team-a', name: 'demo' };

type Handler = (key: string) => Promise<unknown>;

/** Deps over a fake cluster holding one Ready session (reconciling it writes nothing). */
async function steadyState(): Promise<ControllerDeps> {
  const cluster = new FakeCluster();
  cluster.putSession(session());
  const deps = controllerDeps(cluster, new FakeClock(Date.parse('2030-01-01T00:00:10Z')));
  await reconcile(KEY, deps);
  cluster.updatePod('team-a', 'sbs-demo', (v) => podView(ready, (p) => (p.metadata = v.metadata)));
  await reconcile(KEY, deps);
  cluster.writes.length = 0;
  return deps;
}

/** The queue's handler as main.ts builds it, with or without tracing. */
function handler(deps: ControllerDeps, tracing: Tracing | undefined): Handler {
  const run = (): ReturnType<typeof reconcile> => reconcile(KEY, deps);
  if (!tracing) return run;
  const traced = { ...deps, tracePhase: <R>(n: string, f: () => Promise<R>) => tracing.tracePhase(n, f) };
  return (key) => tracing.traceReconcile(key, () => reconcile(KEY, traced));
}

async function timeRound(h: Handler): Promise<number> {
  const start = process.hrtime.bigint();
  for (let i = 0; i < RECONCILES; i++) await h('team-a/demo');
  return Number(process.hrtime.bigint() - start) / 1e3 / RECONCILES;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

async function main(): Promise<void> {
  let received = 0;
  const sink = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received++;
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
  const config: TracingConfig = {
    endpoint: `http://127.0.0.1:${(sink.address() as AddressInfo).port}`,
    protocol: 'http/protobuf',
    sampler: 'parentbased_traceidratio',
    samplerRatio: 1,
    serviceName: 'bench',
  };
  const sampledTracing = startTracing(config, { identity: 'bench' });
  const droppedTracing = startTracing({ ...config, samplerRatio: 0 }, { identity: 'bench' });
  const modes: Array<[string, Handler]> = [
    ['off', handler(await steadyState(), undefined)],
    ['sampled', handler(await steadyState(), sampledTracing)],
    ['dropped', handler(await steadyState(), droppedTracing)],
  ];
  const results = new Map<string, number[]>(modes.map(([m]) => [m, []]));
  for (const [, h] of modes) await timeRound(h); // warm-up (JIT)
  for (let r = 0; r < ROUNDS; r++) {
    for (const [mode, h] of modes) results.get(mode)?.push(await timeRound(h));
    console.error(`[tracing bench] round ${r + 1}/${ROUNDS} done`);
  }
  await Promise.all([sampledTracing.shutdown(), droppedTracing.shutdown()]);
  sink.close();
  const off = median(results.get('off') ?? []);
  console.log(
    `reconcile of a Ready session, ${RECONCILES} per round, ${ROUNDS} rounds (median of round means)`,
  );
  for (const [mode] of modes) {
    const us = median(results.get(mode) ?? []);
    console.log(`  ${mode.padEnd(8)} ${us.toFixed(2)} us/reconcile  ${(us / off).toFixed(2)}x of off`);
  }
  console.log(`  (OTLP export requests received by the sink: ${received})`);
}

await main();
