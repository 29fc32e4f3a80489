/**
 * What the gateway's tracing tests share: the tracing config they start with, waiting for a span
 * to end, and recording the trace context each store call and activity report of an app got.
 */
import { trace, type Context } from '@opentelemetry/api';
import type { InMemorySpanExporter, ReadableSpan } from '@opentelemetry/sdk-trace-base';

import type { ActivitySubject } from '../../src/activity/reporter.js';
import type { AgentApp } from './agent-app.js';

/** Every span sampled; the endpoint is never reached (the tests export to memory). */
export const TRACING_TEST_CONFIG = {
  endpoint: 'http://127.0.0.1:1',
  protocol: 'http/protobuf' as const,
  sampler: 'always_on' as const,
  samplerRatio: 1,
  serviceName: 'sandbox-api-gateway',
};

/** The span id of a trace context handed to a store or the activity reporter. */
export const spanIdOf = (ctx: Context | undefined): string | undefined =>
  ctx ? trace.getSpan(ctx)?.spanContext().spanId : undefined;

/**
 * The finished span of that name, waited for (at most 5 s: an upgraded, hijacked or abandoned
 * request's span ends on close); fails naming the spans that did end.
 */
export async function finishedSpan(exporter: InMemorySpanExporter, name: string): Promise<ReadableSpan> {
  for (let i = 0; i < 200; i++) {
    const span = exporter.getFinishedSpans().find((s) => s.name === name);
    if (span) return span;
    await new Promise((r) => setTimeout(r, 25));
  }
  const names = exporter.getFinishedSpans().map((s) => s.name);
  throw new Error(`no span "${name}" ended; ended: ${names.join(', ') || 'none'}`);
}

/** One store call or activity report, and the trace context it was given. */
export interface TraceArgument {
  call: string;
  trace: Context | undefined;
}

/**
 * Wraps the app's store methods (name and the index of their `trace` argument) and its activity
 * reporter so that each call appends what it got to the returned list (empty it between tests
 * with `length = 0`). The calls themselves go on as before.
 */
export function recordTraceArguments(
  app: AgentApp,
  methods: ReadonlyArray<readonly [method: string, traceArgument: number]>,
): TraceArgument[] {
  const seen: TraceArgument[] = [];
  const store = app.store as unknown as Record<string, (...args: unknown[]) => unknown>;
  for (const [method, at] of methods) {
    const original = store[method]!.bind(app.store);
    store[method] = (...args: unknown[]) => {
      seen.push({ call: method, trace: args[at] as Context | undefined });
      return original(...args);
    };
  }
  const touch = app.activity.touch.bind(app.activity);
  app.activity.touch = (s: ActivitySubject) => {
    seen.push({ call: 'activity', trace: s.trace });
    touch(s);
  };
  return seen;
}
