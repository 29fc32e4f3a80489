/**
 * What tracing skips for a request it does not trace (tracing.ts, kube-spans.ts): the child spans
 * of a span the sampler dropped, which no sampler would record.
 */
import { TraceFlags, trace, type Context, type Span } from '@opentelemetry/api';

/**
 * The span of `parent` when the sampler dropped its trace; undefined when it is sampled or there is
 * none. A child of such a span is never recorded by any sampler OTEL_TRACES_SAMPLER can name (the
 * parent-based ones follow the parent's flag; a trace-id ratio decides the same for the same trace;
 * always_on would have sampled the parent; always_off drops both), so the Kubernetes and agent
 * wrappers skip their span, its attributes and the timing parse: the fixed cost of tracing a
 * request that is not traced. The sampled flag, not isRecording(): a sampled request span that
 * already ended (work that outlives the response) still gets its children.
 */
export function unsampledParent(parent: Context): Span | undefined {
  const span = trace.getSpan(parent);
  return span && !(span.spanContext().traceFlags & TraceFlags.SAMPLED) ? span : undefined;
}
