/**
 * OpenTelemetry traces of the operator: one span per reconcile of a session (`reconcile
 * SandboxSession`, with its namespace and name), a child span per phase that ran (ensureSecret,
 * ensurePod, expireIfDue, removeChildren), and the trace and span ids in the log lines written
 * meanwhile. Exported over OTLP/HTTP (protobuf or JSON) in batches (bounded queue: at most 2,048
 * spans wait; more are dropped, never buffered without limit).
 *
 * Off unless OTEL_EXPORTER_OTLP_ENDPOINT is set, and then free: main.ts imports this module only
 * when tracing is on, so the SDK is not even loaded, and the queue handler and the phases run
 * unwrapped.
 *
 * The span in progress is carried in an AsyncLocalStorage of this module (not registered as the
 * process-wide OpenTelemetry context): nothing else in the operator is instrumented, and two
 * tracers (tests) never share global state.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  trace,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
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

import type { LogFields } from './log-port.js';
import type { TracingConfig } from '@sandbox-platform/api';

/** Attribute keys (OpenTelemetry semantic conventions, and ours under `sandbox.`). */
const ATTR = {
  serviceName: 'service.name',
  serviceInstance: 'service.instance.id',
  namespace: 'k8s.namespace.name',
  session: 'sandbox.session.name',
  phases: 'sandbox.reconcile.phases',
  requeueMs: 'sandbox.reconcile.requeue_after_ms',
} as const;

/** What runs inside a reconcile span. */
interface ReconcileFrame {
  readonly span: Span;
  readonly phases: string[];
}

/** Options of {@link startTracing}. */
export interface TracingOptions {
  /** service.instance.id: the operator's identity (its Pod name). */
  readonly identity: string;
  /** Tests: an exporter to use instead of OTLP, flushed span by span. */
  readonly exporter?: SpanExporter;
}

/** Tracing, once started. */
export interface Tracing {
  /** Runs one reconcile of `key` (namespace/name) in a new root span. */
  traceReconcile<R extends { requeueAfterMs?: number }>(key: string, run: () => Promise<R>): Promise<R>;
  /** Runs a phase in a child span of the reconcile in progress (a root span outside one). */
  tracePhase<R>(name: string, run: () => Promise<R>): Promise<R>;
  /** trace_id and span_id of the span in progress, for log lines; undefined outside a span. */
  logFields(): LogFields | undefined;
  /** The ids of the reconcile that threw `err`, for the queue's retry log line (logged outside it). */
  errorFields(err: unknown): LogFields | undefined;
  /** Exports what is buffered and stops. */
  shutdown(): Promise<void>;
}

/** Builds the tracer provider and the exporter from the configuration. */
export function startTracing(config: TracingConfig, opts: TracingOptions): Tracing {
  const exporter = opts.exporter ?? otlpExporter(config);
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({
      [ATTR.serviceName]: config.serviceName,
      [ATTR.serviceInstance]: opts.identity,
    }),
    sampler: sampler(config),
    spanProcessors: [opts.exporter ? new SimpleSpanProcessor(exporter) : new BatchSpanProcessor(exporter)],
  });
  return new ReconcileTracing(provider.getTracer('sandbox-operator'), () => provider.shutdown());
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

class ReconcileTracing implements Tracing {
  private readonly frames = new AsyncLocalStorage<ReconcileFrame>();
  private readonly failed = new WeakMap<object, LogFields>();

  constructor(
    private readonly tracer: Tracer,
    private readonly stop: () => Promise<void>,
  ) {}

  async traceReconcile<R extends { requeueAfterMs?: number }>(
    key: string,
    run: () => Promise<R>,
  ): Promise<R> {
    const slash = key.indexOf('/');
    const span = this.tracer.startSpan('reconcile SandboxSession', {
      kind: SpanKind.INTERNAL,
      root: true,
      attributes: { [ATTR.namespace]: key.slice(0, slash), [ATTR.session]: key.slice(slash + 1) },
    });
    const frame: ReconcileFrame = { span, phases: [] };
    try {
      const result = await this.frames.run(frame, run);
      if (result.requeueAfterMs !== undefined) span.setAttribute(ATTR.requeueMs, result.requeueAfterMs);
      return result;
    } catch (err) {
      fail(span, err);
      if (typeof err === 'object' && err !== null) this.failed.set(err, ids(span));
      throw err;
    } finally {
      span.setAttribute(ATTR.phases, frame.phases);
      span.end();
    }
  }

  async tracePhase<R>(name: string, run: () => Promise<R>): Promise<R> {
    const parent = this.frames.getStore();
    parent?.phases.push(name);
    const context = parent ? trace.setSpan(ROOT_CONTEXT, parent.span) : ROOT_CONTEXT;
    const span = this.tracer.startSpan(name, { kind: SpanKind.INTERNAL }, context);
    try {
      return await this.frames.run({ span, phases: parent?.phases ?? [] }, run);
    } catch (err) {
      fail(span, err);
      throw err;
    } finally {
      span.end();
    }
  }

  logFields(): LogFields | undefined {
    const frame = this.frames.getStore();
    return frame ? ids(frame.span) : undefined;
  }

  errorFields(err: unknown): LogFields | undefined {
    return typeof err === 'object' && err !== null ? this.failed.get(err) : undefined;
  }

  shutdown(): Promise<void> {
    return this.stop();
  }
}

/** The span's ids as log fields; none for a span the sampler dropped (no trace to look up). */
function ids(span: Span): LogFields {
  const { traceId, spanId, traceFlags } = span.spanContext();
  return traceFlags & TraceFlags.SAMPLED ? { trace_id: traceId, span_id: spanId } : {};
}

/** Marks the span failed with the error's first line (no stack, no response body). */
function fail(span: Span, err: unknown): void {
  const message = err instanceof Error ? (err.message.split('\n')[0] ?? err.name) : String(err);
  span.setStatus({ code: SpanStatusCode.ERROR, message });
  span.setAttribute('error.type', err instanceof Error ? err.name : typeof err);
}
