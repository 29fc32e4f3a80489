/**
 * buildApp: the gateway as a fastify plugin tree. It never listens (server.ts does) and creates
 * no external resources: every dependency arrives in `deps`, so tests pass fakes and the
 * composition root passes the real informer-backed store and transports.
 */
import websocketPlugin from '@fastify/websocket';
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyPluginCallback,
} from 'fastify';

import type { ActivityReporter } from './activity/reporter.js';
import auditPlugin, { type AuditPluginOptions } from './audit/plugin.js';
import type { KeyAuthenticator } from './auth/keys.js';
import type { GatewayConfig } from './config.js';
import { onClientError } from './client-error.js';
import type { AgentInteractive } from './exec/agent/agent-interactive.js';
import type { ExecTransport } from './exec/types.js';
import { ByteBudget } from './limits/byte-budget.js';
import { consoleRoutes, consoleWsKey, type ConsoleAssets } from './console/index.js';
import { e2bBridgePlugin, e2bPlugin, type E2bDeps } from './e2b/index.js';
import { createMetrics, type GatewayMetrics } from './metrics.js';
import authPlugin from './plugins/auth.js';
import errorsPlugin from './plugins/errors.js';
import jsonBodyPlugin from './plugins/json-body.js';
import limitsPlugin, { sheddingPlugin } from './plugins/limits.js';
import metricsPlugin from './plugins/metrics.js';
import openapiPlugin from './plugins/openapi.js';
import servicesPlugin from './plugins/services.js';
import shutdownPlugin from './plugins/shutdown.js';
import validationPlugin from './plugins/validation.js';
import codeRoutes from './routes/code/index.js';
import execRoutes from './routes/exec/index.js';
import fileRoutes from './routes/files/index.js';
import healthRoutes from './routes/health.js';
import processRoutes from './routes/processes/index.js';
import portRoutes from './routes/ports/index.js';
import ptyRoutes from './routes/pty/index.js';
import watchRoutes from './routes/watch/index.js';
import mcpRoutes from './routes/mcp/index.js';
import auditRoutes from './routes/audit/index.js';
import egressRoutes from './routes/egress/index.js';
import sessionRoutes from './routes/sessions/index.js';
import snapshotRoutes from './routes/snapshots/index.js';
import { previewPlugin, previewRewrite, type PreviewDeps } from './preview/index.js';
import type { TransportKind } from './sessions/model.js';
import type { SessionStore } from './sessions/store.js';
import type { SnapshotApi } from './snapshots/kube-snapshots.js';

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
  /** Budget of large answers held at once, shared with the Agent transport (default: from config). */
  budget?: ByteBudget;
  /** The Agent's processes, terminal and port dialling (none: those routes answer 501). */
  interactive?: AgentInteractive;
  /** Tracing on: @fastify/otel's plugin, registered before every route (tracing/tracing.ts). */
  tracingPlugin?: FastifyPluginCallback;
  /** Snapshots and forks (docs/snapshots.md); none: those routes answer 501. */
  snapshots?: SnapshotApi;
  /** The web console's files (console/); none: /console is not served. */
  console?: ConsoleAssets;
  /** Browser previews (preview/); none: off (the link route answers 404). */
  previews?: PreviewDeps;
  /** The E2B-compatible API (e2b/index.ts); none: not served. */
  e2b?: E2bDeps;
  /** The audit trail's client and the egress rule writer (issue 30); none: not audited, 501. */
  audit?: AuditPluginOptions;
}

/**
 * Largest WebSocket message accepted from a caller (terminal input is further bounded by the agent
 * at 64 KiB; port WebSockets relay messages up to this size).
 */
const WS_MAX_MESSAGE_BYTES = 1024 * 1024;

/** How often node:http checks the header and request timeouts (their granularity). */
const CONNECTIONS_CHECK_MS = 1000;

/** Builds the app (ready to inject() or listen()). */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const limits = deps.config.server;
  const app = Fastify({
    loggerInstance: deps.logger,
    // Per-request lines come from the metrics plugin (debug) and the routes (info, with session keys).
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: deps.config.maxBodyBytes,
    // The time to *receive* a request (headers and body), not to answer it: an exec may run for
    // minutes after its body arrived (its own deadline bounds it). Slow or stalled senders get 408.
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    // No socket inactivity timeout while a request runs (a quiet exec is not idle); unread
    // answers are handled by the write timeout (plugins/limits.ts).
    connectionTimeout: 0,
    http: { headersTimeout: limits.headersTimeoutMs, connectionsCheckingInterval: CONNECTIONS_CHECK_MS },
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    // A request broken while it arrived: a status when nothing was answered yet, else only a cut.
    clientErrorHandler: onClientError,
    // Preview hosts reach only the preview routes, whatever their path (preview/rewrite.ts).
    ...(deps.previews ? { rewriteUrl: previewRewrite(deps.previews.preview.domain) } : {}),
  });
  const budget = deps.budget ?? new ByteBudget(limits.maxBufferedAnswerBytes);
  await app.register(errorsPlugin);
  // Upgrades go through the routes' hooks (auth, tenant checks) before they are answered. First of
  // the hooks: its onRequest marks upgrades, so a refused one (401 from auth) closes its socket.
  await app.register(websocketPlugin, {
    options: { maxPayload: WS_MAX_MESSAGE_BYTES, perMessageDeflate: false },
  });
  await app.register(shutdownPlugin);
  await app.register(validationPlugin);
  await app.register(openapiPlugin);
  const metrics = deps.metrics ?? createMetrics();
  // The one place the shared services are built and put on the instance (routes read app.<name>).
  await app.register(servicesPlugin, { deps, metrics });
  await app.register(metricsPlugin, { metrics });
  await app.register(jsonBodyPlugin);
  await app.register(sheddingPlugin);
  if (deps.tracingPlugin) await app.register(deps.tracingPlugin);
  // The terminal's key from a browser's WebSocket subprotocol, just before authentication.
  await app.register(consoleWsKey);
  // E2B credentials become the bearer key (or a one-time ticket) just before authentication.
  if (deps.e2b) await app.register(e2bBridgePlugin, deps.e2b);
  await app.register(authPlugin, { keys: deps.e2b?.keys ?? deps.keys });
  await app.register(limitsPlugin, { budget });
  await app.register(auditPlugin, deps.audit ?? {});

  await app.register(healthRoutes);
  await app.register(sessionRoutes);
  await app.register(snapshotRoutes);
  await app.register(execRoutes);
  await app.register(fileRoutes);
  await app.register(processRoutes);
  await app.register(codeRoutes);
  await app.register(watchRoutes);
  await app.register(ptyRoutes);
  await app.register(portRoutes);
  await app.register(mcpRoutes);
  await app.register(egressRoutes);
  await app.register(auditRoutes);
  await app.register(previewPlugin, { previews: deps.previews });
  if (deps.console) await app.register(consoleRoutes, { assets: deps.console });
  if (deps.e2b) await app.register(e2bPlugin, deps.e2b);
  return app;
}
