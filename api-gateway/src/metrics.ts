/**
 * Gateway metrics on a per-app prom-client Registry (never the global one, so two apps in one
 * process, as in the integration tests, do not collide). Names carry the application prefix
 * `sandbox_gateway_` (the chart's dashboard and alerts name them; a unit test in test-e2e checks
 * both against this registry). Labels are bounded: route patterns, not URLs; transport and outcome
 * enums; never session names.
 */
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** The gateway's instruments. */
export interface GatewayMetrics {
  registry: Registry;
  httpDuration: Histogram<'method' | 'route' | 'status'>;
  execDuration: Histogram<'transport' | 'outcome'>;
  execExitCodes: Counter<'transport' | 'exit'>;
  activityPatches: Counter<'outcome'>;
  /** Requests refused by a per-key limit (rate, concurrency). */
  limited: Counter<'limit'>;
  /** Requests shed while the process was saturated, by what was over its threshold. */
  shed: Counter<'reason'>;
}

/** Creates the instruments; `processMetrics` adds Node's default process metrics (server only). */
export function createMetrics(processMetrics = false): GatewayMetrics {
  const registry = new Registry();
  if (processMetrics) collectDefaultMetrics({ register: registry });
  return {
    registry,
    httpDuration: new Histogram({
      name: 'sandbox_gateway_http_request_duration_seconds',
      help: 'HTTP request duration by route pattern and status',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
      registers: [registry],
    }),
    execDuration: new Histogram({
      name: 'sandbox_gateway_exec_duration_seconds',
      help: 'Exec duration through the gateway by transport and outcome (ok, error)',
      labelNames: ['transport', 'outcome'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
      registers: [registry],
    }),
    execExitCodes: new Counter({
      name: 'sandbox_gateway_exec_exit_total',
      help: 'Completed execs by transport and exit class (zero, nonzero, timeout)',
      labelNames: ['transport', 'exit'],
      registers: [registry],
    }),
    activityPatches: new Counter({
      name: 'sandbox_gateway_activity_patches_total',
      help: 'last-activity annotation patches by outcome (ok, error, gone)',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    limited: new Counter({
      name: 'sandbox_gateway_requests_limited_total',
      help: 'Requests refused with 429 by a per-API-key limit (rate, concurrency)',
      labelNames: ['limit'],
      registers: [registry],
    }),
    shed: new Counter({
      name: 'sandbox_gateway_requests_shed_total',
      help: 'Requests answered 503 overloaded (eventLoopDelay, heapUsedBytes, rssBytes, answerBudget)',
      labelNames: ['reason'],
      registers: [registry],
    }),
  };
}
