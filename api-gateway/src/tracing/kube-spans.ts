/**
 * A CLIENT span per Kubernetes API call: wraps the methods of a @kubernetes/client-node API object
 * (the gateway's kube boundary, sessions/kube-store.ts) in a Proxy. The span is named after the
 * method (`k8s createNamespacedCustomObject`) and carries the namespace, resource and object name
 * of its parameter object, never the body; a failed call gets the API status code and the error's
 * name. Watches (the informers) are not wrapped: a watch lasts for minutes and belongs to no request.
 * The pods/exec client (exec/kube/pod-executor.ts) is wrapped the same way: its span lasts until the
 * WebSocket is open (the API server's upgrade), and carries the namespace and Pod, never the command.
 */
import { SpanKind, type Attributes, type Context, type Tracer } from '@opentelemetry/api';

import { fail } from './span-status.js';
import type { TracedApi } from './tracing-config.js';
import { unsampledParent } from './unsampled-parent.js';

/** Attribute keys (OpenTelemetry's k8s conventions and ours). */
const ATTR = {
  method: 'k8s.api.method',
  resource: 'k8s.resource.name',
  namespace: 'k8s.namespace.name',
  object: 'k8s.object.name',
  status: 'http.response.status_code',
} as const;

/**
 * The API object as a request's calls see it: under a sampled trace context, a Proxy whose methods
 * run in a span, a child of that context's span; under none, or one the sampler dropped
 * (unsampled-parent.ts), the object itself, untouched. The context is the caller's, passed down
 * from its route (CallOptions.trace): no process-wide active context is read.
 */
export function traceKubeApi<T extends object>(tracer: Tracer, api: T, kind: string): TracedApi<T> {
  return (parent) =>
    parent === undefined || unsampledParent(parent) ? api : traced(tracer, api, kind, parent);
}

function traced<T extends object>(tracer: Tracer, api: T, kind: string, parent: Context): T {
  return new Proxy(api, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function' || typeof prop !== 'string' || prop === 'constructor') return value;
      const method = value as (...args: unknown[]) => unknown;
      return (...args: unknown[]): unknown =>
        inSpan(tracer, parent, attributes(kind, prop, args[0]), () => method.apply(target, args));
    },
  });
}

function inSpan(tracer: Tracer, parent: Context, attrs: Attributes, call: () => unknown): unknown {
  const span = tracer.startSpan(
    `k8s ${String(attrs[ATTR.method])}`,
    { kind: SpanKind.CLIENT, attributes: attrs },
    parent,
  );
  let result: unknown;
  try {
    result = call();
  } catch (err) {
    fail(span, err);
    span.end();
    throw err;
  }
  if (!(result instanceof Promise)) {
    span.end();
    return result;
  }
  return result.then(
    (value: unknown) => {
      span.end();
      return value;
    },
    (err: unknown) => {
      const code = (err as { code?: unknown }).code;
      if (typeof code === 'number') span.setAttribute(ATTR.status, code);
      fail(span, err);
      span.end();
      throw err;
    },
  );
}

/** Namespace, resource and name from client-node's parameter object (strings only). */
function attributes(kind: string, method: string, params: unknown): Attributes {
  const p = typeof params === 'object' && params !== null ? (params as Record<string, unknown>) : {};
  const text = (v: unknown): string | undefined => (typeof v === 'string' ? v.slice(0, 253) : undefined);
  const namespace = text(p.namespace);
  const name = text(p.name) ?? text(p.podName);
  return {
    [ATTR.method]: method,
    [ATTR.resource]: text(p.plural) ?? kind,
    ...(namespace !== undefined ? { [ATTR.namespace]: namespace } : {}),
    ...(name !== undefined ? { [ATTR.object]: name } : {}),
  };
}
