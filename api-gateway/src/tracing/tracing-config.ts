/**
 * The narrow ports of tracing the rest of the gateway sees (the configuration itself is
 * @sandbox-platform/api's TracingConfig, read from the standard OTEL_* variables as the operator
 * reads them). Kept apart from tracing.ts so that wiring the ports never loads the OpenTelemetry
 * SDK: with tracing off, server.ts does not import tracing.ts at all.
 */
import type { Context } from '@opentelemetry/api';

export type { TracingConfig } from '@sandbox-platform/api';

/**
 * The trace context of one request (@fastify/otel's, with its span): passed explicitly from the
 * route down to the agent and Kubernetes calls (CallOptions.trace), never looked up in a
 * process-wide context (docs/adr/0025-explicit-trace-context.md). Opaque outside tracing/; a type
 * only, so naming it loads nothing.
 */
export type TraceContext = Context;

/** Why a streamed answer's body did not end whole. */
export interface BodyBrokeOff {
  readonly error: Error;
  /** The gateway's own caller went away (disconnected, or stopped reading): not the agent's fault. */
  readonly callerGone: boolean;
}

/** The parts of an agent's answer tracing reads. */
export interface AgentAnswer {
  readonly status: number;
  readonly headers: Record<string, string>;
  /**
   * A streamed answer: `listener` is called once, with its Server-Timing trailer when the body
   * ended, or with why it did not (the connection failed, the caller went away or stopped reading).
   */
  onceDone?(listener: (timing: string | undefined, brokeOff?: BodyBrokeOff) => void): void;
}

/** What the agent transport asks of tracing (absent: tracing off, nothing is wrapped). */
export interface AgentCallTracing {
  /**
   * Runs one call to a sandbox agent in a CLIENT span, a child of `parent`'s span, that ends when
   * the answer's head arrived, or its body when the head announces a `server-timing` trailer (the
   * streamed exec). `send` gets the `traceparent` value to send. The answer's `server-timing` header
   * or trailer (the agent's own timings of the command, agent-timing.ts) becomes the agent's span,
   * a child of this one.
   */
  agentCall<R extends AgentAnswer>(
    parent: TraceContext,
    method: string,
    path: string,
    send: (traceparent: string | undefined) => Promise<R>,
  ): Promise<R>;
}

/**
 * The API object as one request's calls see it: under a trace context, each call in a CLIENT span,
 * a child of that context's span; without one (work of no request), the object itself.
 */
export type TracedApi<T extends object> = (trace: TraceContext | undefined) => T;

/** What the Kubernetes boundary asks of tracing: a client whose every call runs in a CLIENT span. */
export interface KubeApiTracing {
  /** Wraps the methods of a @kubernetes/client-node API object; `kind` names it in the spans. */
  traceApi<T extends object>(api: T, kind: string): TracedApi<T>;
}
