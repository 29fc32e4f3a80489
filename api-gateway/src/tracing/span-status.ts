/** How a failed operation marks its span (shared by the request, Kubernetes and agent spans). */
import { SpanStatusCode, type Span } from '@opentelemetry/api';

/** Marks the span failed with the error's name and first line (no stack, no answer body). */
export function fail(span: Span, err: unknown): void {
  const message = err instanceof Error ? (err.message.split('\n')[0] ?? err.name) : String(err);
  span.setStatus({ code: SpanStatusCode.ERROR, message: message.slice(0, 200) });
  span.setAttribute('error.type', err instanceof Error ? err.name : typeof err);
}
