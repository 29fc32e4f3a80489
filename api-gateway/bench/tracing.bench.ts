/**
 * What tracing costs a gateway exec (make bench-gateway-tracing): `POST /v1/sessions/bench/exec`
 * running `true` through the real gateway code and a real agent on 127.0.0.1, with tracing off and
 * on (sampler always on, i.e. 100%, OTLP/HTTP protobuf export in batches to a loopback sink that
 * answers 200, standing in for a collector), in the same run, interleaved slice by slice
 * (stats.ts). Each gateway runs in its own child process: tracing registers a process-wide
 * propagator and loads the SDK, which must not tax the "off" gateway. The agent answers
 * Server-Timing when called with a sampled traceparent, so "on" includes the agent's part too.
 *
 * A third mode has tracing on with the sampler at 0% (always_off): the SDK and the wrappers run,
 * nothing is recorded or exported (the fixed part of the cost). Two more modes are the floor of the
 * official instrumentation (serveMinimal): a minimal fastify server forwarding the same exec to the
 * same agent, off and with @fastify/otel and the same SDK setup on: how much of the on/off ratio
 * @fastify/otel and the SDK cost by themselves on this machine.
 * Prints p50, p99, mean and req/s per mode and the on/off ratios (goal: on <= 1.10 at p50), and
 * each gateway process's CPU time per exec (user + system over the whole measurement, divided by
 * the calls it served), which a busy machine distorts far less than latency.
 * Usage: run.mjs [--iterations 2000] [--warmup 200] [--rounds 8] [--concurrency 8] [--duration-ms 8000]
 * With BENCH_PROFILE_DIR set, each gateway child writes a CPU profile (.cpuprofile) there.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import http, { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';

import { FastifyOtelInstrumentation } from '@fastify/otel';
import { ROOT_CONTEXT, SpanKind, propagation, trace } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOnSampler, BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import Fastify from 'fastify';

import { ThrottledActivityReporter } from '../src/activity/reporter.js';
import { buildApp } from '../src/app.js';
import { ApiKeys } from '../src/auth/keys.js';
import { loadConfig } from '../src/config.js';
import { AgentTransport } from '../src/exec/agent/agent-transport.js';
import { WinstonFastifyLogger, createWinston } from '../src/logger.js';
import type { TraceContext } from '../src/tracing/tracing-config.js';
import { execTrueCall, hostPort } from './agent-call.js';
import { AGENT_TOKEN, startLocalAgent } from './local-setup.js';
import { measureInterleaved, report } from './stats.js';
import { readySession, StaticStore } from './static-store.js';

// The bench session of local-setup.ts (its agent's token is derived from these).
const NAMESPACE = 'bench';
const NAME = 'bench';
const UID = 'bench-uid';
const MASTER_KEY = Buffer.alloc(32, 1);
const API_KEY = 'bench-tracing-key-0123456789abcdef';

const { values } = parseArgs({
  options: {
    role: { type: 'string', default: '' },
    'agent-port': { type: 'string', default: '0' },
    endpoint: { type: 'string', default: '' },
    sampler: { type: 'string', default: 'always_on' },
    iterations: { type: 'string', default: '2000' },
    warmup: { type: 'string', default: '200' },
    rounds: { type: 'string', default: '8' },
    concurrency: { type: 'string', default: '8' },
    'duration-ms': { type: 'string', default: '8000' },
  },
});

/** Child: the gateway in front of the agent, traced when `endpoint` is set; prints its URL. */
async function serveGateway(agentPort: number, endpoint: string, sampler: string): Promise<void> {
  const config = loadConfig({
    GATEWAY_API_KEYS_FILE: '/unused',
    SANDBOX_MASTER_KEY_FILE: '/unused',
    GATEWAY_NAMESPACES: NAMESPACE,
    GATEWAY_AGENT_PORT: String(agentPort),
    GATEWAY_ALLOW_LOOPBACK_POD_IPS: 'true',
    GATEWAY_KEY_MAX_REQUESTS_PER_SECOND: '0',
    GATEWAY_KEY_MAX_CONCURRENT_REQUESTS: '0',
    GATEWAY_SHED_EVENT_LOOP_DELAY_MS: '0',
    ...(endpoint ? { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_TRACES_SAMPLER: sampler } : {}),
  });
  // As server.ts: the SDK is loaded only when tracing is on.
  const tracing = config.tracing
    ? (await import('../src/tracing/tracing.js')).startTracing(config.tracing)
    : undefined;
  // Info lines are written (batched) to /dev/null's stand-in: a sink that drops them.
  const logger = new WinstonFastifyLogger(createWinston('info', { write: () => true }));
  const transport = new AgentTransport({
    masterKey: MASTER_KEY,
    port: agentPort,
    connectTimeoutMs: config.exec.connectTimeoutMs,
    connectRetries: config.exec.connectRetries,
    deadlineMarginMs: config.exec.deadlineMarginMs,
    maxOutputBytes: config.exec.maxOutputBytes,
    fileTimeoutMs: 60_000,
    ...(tracing ? { tracing: tracing.agent } : {}),
  });
  // As the store's: the patch runs in a span under the reporting request's trace context.
  const patch = { patch: (): Promise<void> => Promise.resolve() };
  const traced = tracing?.kube.traceApi(patch, 'sandboxsessions');
  const patcher = {
    patchLastActivity: (_ns: string, _name: string, _at: Date, trace?: TraceContext): Promise<void> =>
      (traced ? traced(trace) : patch).patch(),
  };
  const app = await buildApp({
    config,
    logger,
    keys: ApiKeys.parse(JSON.stringify({ keys: [{ id: 'bench', key: API_KEY, namespaces: [NAMESPACE] }] }), [
      NAMESPACE,
    ]),
    store: new StaticStore([readySession(NAMESPACE, NAME, UID, '127.0.0.1')]),
    transports: { Agent: transport, KubernetesExec: transport },
    activity: new ThrottledActivityReporter({
      patcher,
      throttleMs: config.activityThrottleMs,
      log: logger,
    }),
    ...(tracing ? { tracingPlugin: tracing.fastifyPlugin } : {}),
  });
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  process.stdout.write(`${JSON.stringify({ url })}\n`);
  answerCpu();
  process.stdin.on('end', () => {
    void app
      .close()
      .then(() => tracing?.shutdown())
      .finally(() => process.exit(0));
  });
}

/**
 * Child: the floor of the official instrumentation, side by side with the gateway: a minimal
 * fastify server with nothing but a route that forwards the exec body to the agent (keep-alive
 * pool, the agent's token; no auth, validation, logging, limits or activity), traced when
 * `endpoint` is set with the gateway's own setup of @fastify/otel and the SDK (tracing.ts: same
 * instrumentation options, provider, always_on sampler, batch OTLP/protobuf exporter to the same
 * sink, W3C propagator, no context manager); the request span's traceparent goes to the agent, so
 * the agent times the command as it does for the gateway. One span per exec (the request's): what
 * @fastify/otel and the SDK cost on this machine whatever a gateway does on top.
 */
async function serveMinimal(agentPort: number, endpoint: string): Promise<void> {
  const app = Fastify();
  let provider: BasicTracerProvider | undefined;
  if (endpoint) {
    provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ 'service.name': 'floor', 'service.instance.id': 'floor' }),
      sampler: new AlwaysOnSampler(),
      spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: `${endpoint}/v1/traces` }))],
    });
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    const instrumentation = new FastifyOtelInstrumentation({
      registerOnInitialization: false,
      instrumentHooks: false,
      instrumentHandler: false,
      recordExceptions: false,
    });
    instrumentation.setTracerProvider(provider);
    await app.register(instrumentation.plugin());
  }
  const pool = new http.Agent({ keepAlive: true, maxSockets: 64, timeout: 4000 });
  app.post('/v1/sessions/:name/exec', (request, reply) => {
    const body = Buffer.from(JSON.stringify(request.body));
    const headers: Record<string, string | number> = {
      authorization: `Bearer ${AGENT_TOKEN}`,
      'content-type': 'application/json',
      'content-length': body.length,
    };
    if (provider) request.opentelemetry().inject(headers);
    const up = http.request(
      { host: '127.0.0.1', port: agentPort, method: 'POST', path: '/v1/exec', agent: pool, headers },
      (res) => {
        const out: Buffer[] = [];
        res.on('data', (c: Buffer) => out.push(c));
        res.on('end', () => {
          void reply
            .code(res.statusCode ?? 502)
            .type('application/json')
            .send(Buffer.concat(out));
        });
      },
    );
    up.on('error', (err) => void reply.code(502).send({ error: err.message }));
    up.end(body);
    return reply;
  });
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  process.stdout.write(`${JSON.stringify({ url })}\n`);
  answerCpu();
  process.stdin.on('end', () => {
    void app
      .close()
      .then(() => provider?.shutdown())
      .finally(() => process.exit(0));
  });
}

/**
 * Each "cpu" line on stdin is answered with the CPU time (user + system, microseconds) this process
 * used since the previous one: the parent brackets the measurement with two.
 */
function answerCpu(): void {
  let since = process.cpuUsage();
  createInterface({ input: process.stdin }).on('line', (line) => {
    if (line !== 'cpu') return;
    const used = process.cpuUsage(since);
    since = process.cpuUsage();
    process.stdout.write(`${JSON.stringify({ cpuMicros: used.user + used.system })}\n`);
  });
}

/**
 * Child: the floor of tracing one exec, the OpenTelemetry SDK's own work without the gateway:
 * the trace's three spans (request SERVER, agent call CLIENT, agent SERVER) with the gateway's
 * attributes, recorded, batched and exported over OTLP/protobuf to the sink, `iterations` times;
 * prints the CPU time per exec (user + system, microseconds) once the last batch is exported.
 */
async function serveFloor(endpoint: string, iterations: number): Promise<void> {
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'floor', 'service.instance.id': 'floor' }),
    sampler: new AlwaysOnSampler(),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: `${endpoint}/v1/traces` }))],
  });
  const tracer = provider.getTracer('floor');
  const once = (): void => {
    const request = tracer.startSpan('POST /v1/sessions/:name/exec', {
      kind: SpanKind.SERVER,
      attributes: {
        'fastify.root': '@fastify/otel',
        'http.request.method': 'POST',
        'url.path': '/v1/sessions/bench/exec',
        'http.route': '/v1/sessions/:name/exec',
      },
    });
    const parent = trace.setSpan(ROOT_CONTEXT, request);
    const call = tracer.startSpan(
      'agent POST /v1/exec',
      { kind: SpanKind.CLIENT, attributes: { 'http.request.method': 'POST', 'url.template': '/v1/exec' } },
      parent,
    );
    call.setAttribute('http.response.status_code', 200);
    const agent = tracer.startSpan(
      'sandbox-agent /v1/exec',
      {
        kind: SpanKind.SERVER,
        attributes: {
          'sandbox.exec.queue_ms': 0.1,
          'sandbox.exec.run_ms': 1.2,
          'sandbox.exec.output_bytes': 0,
          'process.exit.code': 0,
        },
      },
      trace.setSpan(parent, call),
    );
    agent.end();
    call.end();
    request.setAttributes({ 'http.response.status_code': 200 });
    request.end();
  };
  for (let i = 0; i < 2000; i++) once(); // warm up
  await provider.forceFlush();
  const since = process.cpuUsage();
  for (let i = 0; i < iterations; i++) {
    once();
    if (i % 500 === 499) await new Promise((r) => setImmediate(r)); // let batches go out
  }
  await provider.forceFlush();
  const used = process.cpuUsage(since);
  process.stdout.write(`${JSON.stringify({ cpuMicrosPerExec: (used.user + used.system) / iterations })}\n`);
  await provider.shutdown();
}

/** Parent: the SDK floor (serveFloor) in its own process; CPU microseconds per exec. */
async function measureFloor(endpoint: string, iterations: number): Promise<number> {
  const proc = spawn(
    process.execPath,
    [process.argv[1]!, '--role', 'floor', '--endpoint', endpoint, '--iterations', String(iterations)],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: proc.stdout }).once('line', resolve);
    proc.once('exit', (code) => reject(new Error(`floor child exited ${code}`)));
  });
  return (JSON.parse(line) as { cpuMicrosPerExec: number }).cpuMicrosPerExec;
}

/** Parent: starts a gateway child process and returns its URL. */
async function startChild(
  agentPort: number,
  endpoint: string,
  sampler = 'always_on',
  role = 'gateway',
): Promise<{ url: string; proc: ChildProcess; cpuMicros: () => Promise<number> }> {
  // BENCH_PROFILE_DIR=/some/dir: each gateway child writes a CPU profile there on exit.
  const profile = process.env.BENCH_PROFILE_DIR;
  const args = [
    ...(profile
      ? [
          '--cpu-prof',
          `--cpu-prof-dir=${profile}`,
          `--cpu-prof-name=${role}-${sampler}-${endpoint ? 'on' : 'off'}.cpuprofile`,
        ]
      : []),
    process.argv[1]!,
    '--role',
    role,
    '--agent-port',
    String(agentPort),
  ];
  args.push('--endpoint', endpoint, '--sampler', sampler);
  const proc = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: proc.stdout });
  const next = (): Promise<string> =>
    new Promise<string>((resolve, reject) => {
      lines.once('line', resolve);
      proc.once('exit', (code) => reject(new Error(`${role} child exited ${code}`)));
    });
  const url = (JSON.parse(await next()) as { url: string }).url;
  const cpuMicros = async (): Promise<number> => {
    const answer = next();
    proc.stdin.write('cpu\n');
    return (JSON.parse(await answer) as { cpuMicros: number }).cpuMicros;
  };
  return { url, proc, cpuMicros };
}

/** Counts the calls made through `call`. */
function counted(call: () => Promise<void>): { call: () => Promise<void>; count: () => number } {
  let n = 0;
  return {
    call: () => {
      n++;
      return call();
    },
    count: () => n,
  };
}

async function main(): Promise<void> {
  if (values.role === 'gateway') {
    return serveGateway(Number(values['agent-port']), values.endpoint ?? '', values.sampler ?? 'always_on');
  }
  if (values.role === 'minimal') return serveMinimal(Number(values['agent-port']), values.endpoint ?? '');
  if (values.role === 'floor') return serveFloor(values.endpoint ?? '', Number(values.iterations));
  // The sink counts the gateway's exports and the minimal server's (under /floor) apart.
  const exported = { gateway: { requests: 0, bytes: 0 }, minimal: { requests: 0, bytes: 0 } };
  const sink = createServer((req, res) => {
    const into = req.url?.startsWith('/floor/') ? exported.minimal : exported.gateway;
    into.requests++;
    req.on('data', (c: Buffer) => (into.bytes += c.length));
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end());
  });
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
  const endpoint = `http://127.0.0.1:${(sink.address() as AddressInfo).port}`;
  const agent = await startLocalAgent();
  const children = {
    off: await startChild(agent.port, ''),
    on: await startChild(agent.port, endpoint),
    unsampled: await startChild(agent.port, endpoint, 'always_off'),
    minimalOff: await startChild(agent.port, '', 'always_on', 'minimal'),
    minimalOn: await startChild(agent.port, `${endpoint}/floor`, 'always_on', 'minimal'),
  };
  type Key = keyof typeof children;
  const keys = Object.keys(children) as Key[];
  const MODES: Record<Key, string> = {
    off: 'gateway, tracing off',
    on: 'gateway, tracing on (100%)',
    unsampled: 'gateway, tracing on (0%)',
    minimalOff: 'minimal fastify, off',
    minimalOn: 'minimal fastify, on (100%)',
  };
  const path = `/v1/sessions/${NAME}/exec?namespace=${NAMESPACE}`;
  const calls = Object.fromEntries(
    keys.map((k) => [k, execTrueCall({ ...hostPort(children[k].url), path, token: API_KEY })]),
  ) as Record<Key, ReturnType<typeof execTrueCall>>;
  const counts = Object.fromEntries(keys.map((k) => [k, counted(calls[k].call)])) as Record<
    Key,
    ReturnType<typeof counted>
  >;
  const iterations = Number(values.iterations);
  const warmup = Number(values.warmup);
  console.error(
    `[tracing bench] ${iterations} sequential execs per mode (${keys.length} modes) in ${values.rounds} interleaved rounds...`,
  );
  for (const k of keys) await children[k].cpuMicros(); // start of the CPU bracket
  const rows = await measureInterleaved(
    keys.map((k) => ({ mode: MODES[k], call: counts[k].call, iterations, warmup })),
    {
      rounds: Number(values.rounds),
      concurrency: Number(values.concurrency),
      durationMs: Number(values['duration-ms']),
    },
  );
  report(rows, [
    ['tracing on (100%) / off', MODES.on, MODES.off],
    ['tracing on (0%) / off', MODES.unsampled, MODES.off],
    ['floor on / floor off', MODES.minimalOn, MODES.minimalOff],
  ]);
  // CPU per request of each process: robust to a busy machine where latency is not.
  const perCall = {} as Record<Key, number>;
  for (const k of keys) perCall[k] = (await children[k].cpuMicros()) / counts[k].count();
  // The servers stop first (their shutdown exports what their batches still hold), so that the
  // sink's counts are theirs alone: the SDK floor below exports to the same sink.
  for (const k of keys) calls[k].close();
  for (const k of keys) children[k].proc.stdin!.end();
  await Promise.all(keys.map((k) => new Promise((r) => children[k].proc.once('exit', r))));
  const gatewayExports = { ...exported.gateway };
  // The SDK's own cost of this trace (three spans recorded and exported), alone in a process.
  const floor = await measureFloor(endpoint, 20_000);
  console.log(
    `SDK floor: the OpenTelemetry SDK recording and exporting one exec's three spans costs ${floor.toFixed(1)} us of CPU; ` +
      `off + floor = ${((perCall.off + floor) / perCall.off).toFixed(2)}x of the off gateway's CPU per exec`,
  );
  console.log(
    `gateway CPU per exec (user + system): off ${perCall.off.toFixed(1)} us, on (100%) ${perCall.on.toFixed(1)} us, ` +
      `on (0%) ${perCall.unsampled.toFixed(1)} us; on (100%) / off ${(perCall.on / perCall.off).toFixed(2)}x ` +
      `(+${(perCall.on - perCall.off).toFixed(1)} us), on (0%) / off ${(perCall.unsampled / perCall.off).toFixed(2)}x ` +
      `(${counts.off.count()}/${counts.on.count()}/${counts.unsampled.count()} calls)`,
  );
  console.log(
    `floor CPU per exec (minimal fastify forwarder): off ${perCall.minimalOff.toFixed(1)} us, ` +
      `@fastify/otel + SDK on ${perCall.minimalOn.toFixed(1)} us; on / off ${(perCall.minimalOn / perCall.minimalOff).toFixed(2)}x ` +
      `(+${(perCall.minimalOn - perCall.minimalOff).toFixed(1)} us; ${counts.minimalOff.count()}/${counts.minimalOn.count()} calls)`,
  );
  console.log(
    `OTLP export of the traced gateway (100%): ${gatewayExports.requests} requests, ${gatewayExports.bytes} bytes, ` +
      `${(gatewayExports.bytes / counts.on.count()).toFixed(0)} bytes per exec; of the floor: ` +
      `${(exported.minimal.bytes / counts.minimalOn.count()).toFixed(0)} bytes per exec`,
  );
  await agent.close();
  sink.close();
}

await main();
