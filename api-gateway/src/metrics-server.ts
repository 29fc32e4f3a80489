/**
 * The gateway's /metrics on a port of its own (GATEWAY_METRICS_PORT, chart gateway.metricsPort),
 * apart from the API port, which answers 404 for /metrics: a NetworkPolicy or a scrape config
 * opens one without the other, and a scrape never passes the API's auth, limits, shedding or
 * tracing. The server is the operator's (@sandbox-platform/api, crds/src/telemetry-server.ts):
 * node:http, GET/HEAD only, no auth, bounded timeouts and connections, nothing but /metrics.
 */
import type { Server } from 'node:http';

import { boundPort, startTelemetryServer, stopTelemetryServer } from '@sandbox-platform/api';
import type { FastifyBaseLogger } from 'fastify';
import type { Registry } from 'prom-client';

/** What the metrics server needs. */
export interface MetricsServerOptions {
  readonly port: number;
  readonly host: string;
  /** The app's registry (metrics.ts): the same instruments the routes feed. */
  readonly registry: Registry;
  readonly logger: FastifyBaseLogger;
}

/** The running metrics server. */
export interface MetricsServer {
  /** The bound port (the configured one, or the free port picked for 0). */
  readonly port: number;
  close(): Promise<void>;
}

/** Starts serving /metrics; resolves once bound. */
export async function startMetricsServer(opts: MetricsServerOptions): Promise<MetricsServer> {
  const server: Server = await startTelemetryServer({
    port: opts.port,
    host: opts.host,
    metrics: opts.registry,
    onError: (path, err) => opts.logger.error({ path, err }, 'metrics handler failed'),
  });
  return { port: boundPort(server, opts.port), close: () => stopTelemetryServer(server) };
}
