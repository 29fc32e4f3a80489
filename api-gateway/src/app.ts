/**
 * buildApp: the gateway as a fastify plugin tree. It never listens (server.ts does) and creates
 * no external resources: every dependency arrives in `deps`, so tests pass fakes and the
 * composition root passes the real informer-backed store and transports.
 */
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';

import type { ActivityReporter } from './activity/reporter.js';
import type { KeyAuthenticator } from './auth/keys.js';
import type { GatewayConfig } from './config.js';
import type { ExecTransport } from './exec/types.js';
import { createMetrics, type GatewayMetrics } from './metrics.js';
import authPlugin from './plugins/auth.js';
import configPlugin from './plugins/config.js';
import errorsPlugin from './plugins/errors.js';
import metricsPlugin from './plugins/metrics.js';
import openapiPlugin from './plugins/openapi.js';
import activityPlugin from './plugins/activity.js';
import servicesPlugin from './plugins/services.js';
import shutdownPlugin from './plugins/shutdown.js';
import storePlugin from './plugins/store.js';
import transportsPlugin from './plugins/transports.js';
import validationPlugin from './plugins/validation.js';
import execRoutes from './routes/exec/index.js';
import fileRoutes from './routes/files/index.js';
import healthRoutes from './routes/health.js';
import mcpRoutes from './routes/mcp/index.js';
import sessionRoutes from './routes/sessions/index.js';
import type { TransportKind } from './sessions/model.js';
import type { SessionStore } from './sessions/store.js';

/** Everything the app needs; nothing else is reached from inside it. */
export interface AppDeps {
  config: GatewayConfig;
  /** fastify's logger interface (a winston adapter in production). */
  logger: FastifyBaseLogger;
  keys: KeyAuthenticator;
  store: SessionStore & { close?: () => Promise<void> };
  transports: Record<TransportKind, ExecTransport & { close?: () => void }>;
  activity: ActivityReporter & { flush?: () => Promise<void> };
  /** Defaults to a fresh registry without process metrics. */
  metrics?: GatewayMetrics;
}

/** Builds the app (ready to inject() or listen()). */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: deps.logger,
    // Per-request lines come from the metrics plugin (debug) and the routes (info, with session keys).
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: deps.config.maxBodyBytes,
    // Execs may run for minutes: no request timeout; the exec deadline bounds them instead.
    requestTimeout: 0,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
  });
  await app.register(errorsPlugin);
  await app.register(shutdownPlugin);
  await app.register(validationPlugin);
  await app.register(openapiPlugin);
  await app.register(configPlugin, { config: deps.config });
  await app.register(metricsPlugin, { metrics: deps.metrics ?? createMetrics() });
  await app.register(storePlugin, { store: deps.store });
  await app.register(authPlugin, { keys: deps.keys });
  await app.register(transportsPlugin, { transports: deps.transports });
  await app.register(activityPlugin, { activity: deps.activity });
  await app.register(servicesPlugin);

  await app.register(healthRoutes);
  await app.register(sessionRoutes);
  await app.register(execRoutes);
  await app.register(fileRoutes);
  await app.register(mcpRoutes);
  return app;
}
