/**
 * OpenTelemetry traces of the gateway (docs/observability.md, "Traces"):
 * - a SERVER span per request from `@fastify/otel`, the fastify project's own instrumentation,
 *   named `<method> <route pattern>` (probes and /metrics are not traced; no hook or handler spans:
 *   one span per request is what a trace needs and what it costs);
 * - a CLIENT span per Kubernetes API call the gateway makes (kube-spans.ts);
 * - a CLIENT span per call to a sandbox agent, which sends the W3C `traceparent` to the agent, and
 *   the agent's span of the command, built from the timings the agent reports in its answer
 *   (agent-timing.ts; why not exported by the agent itself: docs/adr/0019);
 * - trace_id and span_id in the log lines of a sampled request (its `request.log`).
 * Exported over OTLP/HTTP (protobuf or JSON) in batches (at most 2,048 spans wait; more are dropped).
 *
 * Off unless OTEL_EXPORTER_OTLP_ENDPOINT is set, and then free: server.ts imports this module only
 * when tracing is on, so the SDK is not even loaded and nothing is wrapped.
 *
 * No context manager is registered (docs/adr/0025-explicit-trace-context.md): the request's trace
 * context (@fastify/otel's, with its span) is passed explicitly from the route down to the agent
 * and Kubernetes calls (CallOptions.trace, request-trace.ts). An AsyncLocalStorage context manager
 * cost about 100 us of CPU per exec on Node 20 (async hooks on every promise of the process); the
 * API's default no-op manager is all @fastify/otel and the SDK need (the request span is started
 * from the extracted traceparent, the batch exporter runs outside any request).
 *
 * Never in an attribute: command text, output, stdin, file contents, tokens or query strings (the
 * request span's url.path is the path alone; exceptions are not recorded, their messages may quote
 * what a sandbox answered).
 */
import { hostname } from 'node:os';

import { FastifyOtelInstrumentation } from '@fastify/otel';
import {
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  isSpanContextValid,
  propagation,
  trace,
  type Context,
  type SpanContext,
  type Tracer,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter as OtlpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OtlpProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  SimpleSpanProcessor,
  TraceIdRatioBasedSampler,
  type Sampler,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import type { FastifyPluginCallback } from 'fastify';
import fp from 'fastify-plugin';

import { parseAgentTiming, type AgentTiming } from './agent-timing.js';
import { traceKubeApi } from './kube-spans.js';
import { unsampledParent } from './unsampled-parent.js';
import { fail } from './span-status.js';
import { EVENT_CLIENT_GONE, requestLifetime } from './request-lifetime.js';
import type {
  AgentAnswer,
  AgentCallTracing,
  BodyBrokeOff,
  KubeApiTracing,
  TracingConfig,
} from './tracing-config.js';

/** Attribute keys (OpenTelemetry semantic conventions, and ours under `sandbox.`). */
export const ATTR = {
  serviceName: 'service.name',
  serviceInstance: 'service.instance.id',
  urlPath: 'url.path',
  method: 'http.request.method',
  status: 'http.response.status_code',
  urlTemplate: 'url.template',
  queueMs: 'sandbox.exec.queue_ms',
  runMs: 'sandbox.exec.run_ms',
  outputBytes: 'sandbox.exec.output_bytes',
  exitCode: 'process.exit.code',
  timingInvalid: 'sandbox.agent.timing_invalid',
} as const;

/** A head announcing the Server-Timing trailer. */
const TIMING_TRAILER = /(?:^|,)\s*server-timing\s*(?:,|$)/i;

/**
 * Routes never traced: probes, and a scraper still pointed at /metrics of the API port (a 404 there,
 * metrics have their own port), would drown the traces that matter.
 */
const UNTRACED = new Set(['/healthz', '/readyz', '/metrics']);

/** Tracing, once started. */
export interface GatewayTracing {
  /** Register before any route (buildApp does): @fastify/otel wires routes as they are added. */
  readonly fastifyPlugin: FastifyPluginCallback;
  readonly agent: AgentCallTracing;
  readonly kube: KubeApiTracing;
  /** Exports what is buffered, stops, and unregisters the propagator. */
  shutdown(): Promise<void>;
}

/** Options of {@link startTracing}. */
export interface TracingOptions {
  /** service.instance.id (default: the host name, the Pod's name in a cluster). */
  readonly identity?: string;
  /** Tests and benchmarks: an exporter to use instead of OTLP. */
  readonly exporter?: SpanExporter;
  /** With `exporter`: export span by span (tests) instead of in batches. */
  readonly simple?: boolean;
}

/** Builds the provider, registers the W3C propagator, and the ports. */
export function startTracing(config: TracingConfig, opts: TracingOptions = {}): GatewayTracing {
  const exporter = opts.exporter ?? otlpExporter(config);
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({
      [ATTR.serviceName]: config.serviceName,
      [ATTR.serviceInstance]: opts.identity ?? hostname(),
    }),
    sampler: sampler(config),
    spanProcessors: [opts.simple ? new SimpleSpanProcessor(exporter) : new BatchSpanProcessor(exporter)],
  });
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  const tracer = provider.getTracer('sandbox-api-gateway');

  const instrumentation = new FastifyOtelInstrumentation({
    registerOnInitialization: false,
    instrumentHooks: false,
    instrumentHandler: false,
    recordExceptions: false,
    ignorePaths: ({ url }) => UNTRACED.has(url),
    requestHook: (span, request) => {
      // A span the sampler dropped keeps no name or attribute: formatting them is wasted work.
      if (!span.isRecording()) return;
      span.updateName(`${request.method} ${request.routeOptions.url ?? 'unknown route'}`);
      span.setAttribute(ATTR.urlPath, request.url.split('?', 1)[0]!);
    },
  });
  instrumentation.setTracerProvider(provider);

  return {
    fastifyPlugin: tracingPlugin(instrumentation.plugin()),
    agent: { agentCall: (parent, method, path, send) => agentCall({ tracer, parent }, method, path, send) },
    kube: { traceApi: (api, kind) => traceKubeApi(tracer, api, kind) },
    shutdown: async () => {
      try {
        await provider.shutdown();
      } finally {
        instrumentation.disable();
        propagation.disable();
      }
    },
  };
}

/** @fastify/otel's plugin, then the hooks that end its spans with the response (request-lifetime.ts). */
function tracingPlugin(otel: FastifyPluginCallback): FastifyPluginCallback {
  return fp(
    (app, _opts, done) => {
      app.register(otel);
      app.register(requestLifetime);
      done();
    },
    { name: 'tracing', fastify: '5.x' },
  );
}

/** OTLP/HTTP to `<endpoint>/v1/traces`, in the configured encoding. */
function otlpExporter(config: TracingConfig): SpanExporter {
  const url = `${config.endpoint.replace(/\/+$/, '')}/v1/traces`;
  return config.protocol === 'http/json' ? new OtlpJsonExporter({ url }) : new OtlpProtoExporter({ url });
}

/** The OTEL_TRACES_SAMPLER semantics. */
export function sampler(config: Pick<TracingConfig, 'sampler' | 'samplerRatio'>): Sampler {
  const ratio = new TraceIdRatioBasedSampler(config.samplerRatio);
  switch (config.sampler) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return ratio;
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: ratio });
  }
}

/** Epoch milliseconds with sub-millisecond precision (the SDK's own clock). */
function now(): number {
  return performance.timeOrigin + performance.now();
}

/**
 * One agent call in a CLIENT span, a child of `parent`'s span; the agent's timings, when its answer
 * carries them, become the agent's SERVER span: it ends when the answer's head arrived and starts
 * queue + run earlier (the gateway's clock: no skew between the two), never before the call began
 * (a sandbox may report anything within the parser's bounds).
 *
 * Under a parent the sampler dropped, no span at all (unsampled-parent.ts): the call goes out with the
 * parent's traceparent, its sampled flag off, and the agent measures nothing.
 */
function agentCall<R extends AgentAnswer>(
  under: Under,
  method: string,
  path: string,
  send: (traceparent: string | undefined) => Promise<R>,
): Promise<R> {
  const unsampled = unsampledParent(under.parent);
  if (unsampled) return send(traceparentOf(unsampled.spanContext()));
  return recordedAgentCall(under, method, path, send);
}

/** The W3C traceparent of a span context; undefined for an invalid one. */
function traceparentOf(sc: SpanContext): string | undefined {
  return isSpanContextValid(sc)
    ? `00-${sc.traceId}-${sc.spanId}-${sc.traceFlags & TraceFlags.SAMPLED ? '01' : '00'}`
    : undefined;
}

/** The tracer, and the trace context a call's span is a child of. */
interface Under {
  readonly tracer: Tracer;
  readonly parent: Context;
}

async function recordedAgentCall<R extends AgentAnswer>(
  { tracer, parent }: Under,
  method: string,
  path: string,
  send: (traceparent: string | undefined) => Promise<R>,
): Promise<R> {
  const route = agentRoute(path);
  const startTime = now();
  const span = tracer.startSpan(
    `agent ${method} ${route}`,
    { kind: SpanKind.CLIENT, startTime, attributes: { [ATTR.method]: method, [ATTR.urlTemplate]: route } },
    parent,
  );
  const traceparent = traceparentOf(span.spanContext());
  try {
    const res = await send(traceparent);
    span.setAttribute(ATTR.status, res.status);
    if (res.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    const finish = (header: string | undefined, brokeOff?: BodyBrokeOff): void => {
      const endTime = now();
      const timing = parseAgentTiming(header);
      if (timing)
        agentSpan(tracer, trace.setSpan(parent, span), { route, timing, callStart: startTime, endTime });
      else if (header !== undefined) span.setAttribute(ATTR.timingInvalid, true);
      if (brokeOff) {
        fail(span, brokeOff.error);
        if (brokeOff.callerGone) span.addEvent(EVENT_CLIENT_GONE, endTime);
      }
      span.end(endTime);
    };
    // A streamed exec: the timings come as a trailer, once the body ended; a body that broke off,
    // or that the caller abandoned, ends the span too, failed (and says when the caller left).
    if (res.onceDone && TIMING_TRAILER.test(res.headers.trailer ?? '')) res.onceDone(finish);
    else finish(res.headers['server-timing']);
    return res;
  } catch (err) {
    fail(span, err);
    span.end();
    throw err;
  }
}

function agentSpan(
  tracer: Tracer,
  parent: Context,
  {
    route,
    timing: t,
    callStart,
    endTime,
  }: { route: string; timing: AgentTiming; callStart: number; endTime: number },
): void {
  const span = tracer.startSpan(
    `sandbox-agent ${route}`,
    {
      kind: SpanKind.SERVER,
      startTime: Math.max(callStart, endTime - t.queueMs - t.runMs),
      attributes: {
        [ATTR.queueMs]: t.queueMs,
        [ATTR.runMs]: t.runMs,
        ...(t.outputBytes !== undefined ? { [ATTR.outputBytes]: t.outputBytes } : {}),
        ...(t.exitCode !== undefined ? { [ATTR.exitCode]: t.exitCode } : {}),
      },
    },
    parent,
  );
  span.end(endTime);
}

/** The agent path as a route: file paths and process ids are not span names. */
export function agentRoute(path: string): string {
  if (path === '/v1/exec' || path === '/v1/exec/stream') return path;
  const segments = path.split('/');
  return segments.length > 3 ? `/${segments[1]}/${segments[2]}/{id}` : path;
}
