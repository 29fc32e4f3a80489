/**
 * The operator's HTTP endpoints, one server per port: the probes, /healthz (liveness: the process
 * and its event loop answer) and /readyz (readiness, see Supervisor.isReady), on HTTP_PORT; and
 * /metrics (Prometheus text) on METRICS_PORT, so a scrape policy or a NetworkPolicy can open one
 * without the other. The server itself is shared with the gateway's metrics port
 * (@sandbox-platform/api, crds/src/telemetry-server.ts); this adapter logs its handler failures.
 */
import type { Server } from 'node:http';

import { startTelemetryServer, stopTelemetryServer } from '@sandbox-platform/api';
import type { Registry } from 'prom-client';

import type { Logger } from './log-port.js';
import { errorFields } from './logger.js';

/** What the endpoint needs; it serves the probes when given isReady, /metrics when given a registry. */
export interface HttpServerOptions {
  readonly port: number;
  readonly host?: string;
  readonly registry?: Registry;
  /** Readiness: see the caller's definition. */
  readonly isReady?: () => boolean;
  readonly logger: Logger;
}

/** Starts listening; resolves once bound. */
export function startHttpServer(opts: HttpServerOptions): Promise<Server> {
  const { port, host, registry, isReady, logger } = opts;
  return startTelemetryServer({
    port,
    host,
    metrics: registry,
    isReady,
    onError: (path, err) => logger.error('http handler failed', { path, ...errorFields(err) }),
  });
}

/** Closes the server (idle keep-alive connections included). */
export const stopHttpServer: (server: Server) => Promise<void> = stopTelemetryServer;
