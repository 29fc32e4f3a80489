/**
 * The composition root: the only module that reads the environment, loads files, creates
 * Kubernetes clients and listens. Config is validated at boot (fail fast). On SIGTERM the server
 * first drains (readiness fails, connections still accepted for the shutdown delay, so the Service
 * stops routing here before the listener goes away), then stops accepting, lets in-flight requests
 * finish (bounded by the shutdown grace), flushes pending activity patches, stops the informers,
 * and exits. SIGINT (a terminal's Ctrl-C) skips the drain.
 */
import { readFile } from 'node:fs/promises';

import * as k8s from '@kubernetes/client-node';
import { formatLogLine, readMasterKeyFile } from '@sandbox-platform/api';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';

import { buildApp } from './app.js';
import { ApiKeys } from './auth/keys.js';
import { composeDeps } from './compose.js';
import { loadConfig } from './config.js';
import { WinstonFastifyLogger, createWinston, flushLogs, serializeError } from './logger.js';
import { createMetrics } from './metrics.js';
import { startMetricsServer, type MetricsServer } from './metrics-server.js';

/** A KubeConfig from the usual places (in-cluster service account, or $KUBECONFIG). */
function loadKubeConfig(): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  kc.loadFromDefault();
  return kc;
}

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const winston = createWinston(config.logLevel);
  // Lines are written in batches (logger.ts): whatever is pending goes out on every exit path.
  process.on('exit', () => flushLogs(winston));
  // Loaded only when on: with tracing off the SDK is not even imported (tracing/tracing.ts).
  const tracing = config.tracing
    ? (await import('./tracing/tracing.js')).startTracing(config.tracing)
    : undefined;
  const logger = new WinstonFastifyLogger(winston);
  const keys = ApiKeys.parse(await readFile(config.apiKeysFile, 'utf8'), config.namespaces);
  // The one shared reader: the operator derives the same tokens from the same bytes.
  const masterKey = readMasterKeyFile(config.masterKeyFile);
  const deps = composeDeps({
    config,
    logger,
    keys,
    masterKey,
    // Two KubeConfig objects on purpose: REST and watches on one, pods/exec WebSockets on the other.
    kubeConfig: loadKubeConfig(),
    streamingKubeConfig: loadKubeConfig(),
    metrics: createMetrics(true),
    ...(tracing ? { tracing } : {}),
  });
  const metricsServer = await startMetricsServer({
    port: config.metricsPort,
    host: config.host,
    registry: deps.metrics.registry,
    logger,
  });
  const app = await buildApp(tracing ? { ...deps, tracingPlugin: tracing.fastifyPlugin } : deps);
  await deps.store.start();
  await app.listen({ port: config.port, host: config.host });
  logger.info(
    {
      namespaces: config.namespaces,
      keys: keys.size,
      synced: deps.store.synced(),
      metricsPort: metricsServer.port,
    },
    'api-gateway listening',
  );
  onSignals(app, logger, {
    delayMs: config.shutdownDelayMs,
    graceMs: config.shutdownGraceMs,
    tracing,
    metricsServer,
  });
}

/** Graceful shutdown on SIGTERM/SIGINT, forced after the delay plus the grace period. */
function onSignals(
  app: FastifyInstance,
  logger: FastifyBaseLogger,
  {
    delayMs,
    graceMs,
    tracing,
    metricsServer,
  }: {
    delayMs: number;
    graceMs: number;
    tracing?: { shutdown(): Promise<void> };
    metricsServer: MetricsServer;
  },
): void {
  let closing = false;
  const shutdown = (signal: string, drainMs: number): void => {
    if (closing) return;
    closing = true;
    logger.info({ signal, drainMs }, 'shutting down: draining, then finishing in-flight requests');
    const force = setTimeout(() => {
      logger.error({ drainMs, graceMs }, 'shutdown grace exceeded; exiting');
      process.exit(1);
    }, drainMs + graceMs);
    force.unref();
    app
      .drain(drainMs)
      .then(() => app.close())
      // Scrapes are answered while requests finish; the metrics port closes after the API's.
      .then(() => metricsServer.close())
      // The spans still buffered are exported before the exit (bounded by the grace timer).
      .then(() => tracing?.shutdown())
      .then(
        () => {
          logger.info({}, 'shut down');
          process.exit(0);
        },
        (err: unknown) => {
          logger.error({ err }, 'shutdown failed');
          process.exit(1);
        },
      );
  };
  process.once('SIGTERM', () => shutdown('SIGTERM', delayMs));
  process.once('SIGINT', () => shutdown('SIGINT', 0));
}

main().catch((err: unknown) => {
  // The logger may not exist yet (bad config): write one JSON line to stderr and exit non-zero.
  const error = err instanceof Error ? serializeError(err) : { message: String(err) };
  process.stderr.write(
    formatLogLine(
      { service: 'sandbox-api-gateway', level: 'error', msg: 'api-gateway failed to start' },
      { err: error },
    ) + '\n',
  );
  process.exit(1);
});
