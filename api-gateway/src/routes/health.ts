/**
 * Unauthenticated operational routes: liveness, readiness (every session and Pod cache synced) and the
 * OpenAPI document. They reveal no session data. Prometheus metrics are not here: they have a port
 * of their own (metrics-server.ts); /metrics on this port is a 404 problem that names that port,
 * for a scrape config still pointing here (without a key it would otherwise get 401).
 */
import type { FastifyInstance, FastifyReply } from 'fastify';

import { ProblemError } from '../errors.js';

export default function healthRoutes(
  app: FastifyInstance,
  _opts: unknown,
  done: (err?: Error) => void,
): void {
  const config = { public: true };
  app.get('/healthz', { config }, () => ({ status: 'ok' }));

  app.get('/readyz', { config }, (_request, reply: FastifyReply) => {
    // Draining first: a replica that is shutting down leaves the Service even if its cache is fine.
    if (app.draining()) return reply.status(503).send({ status: 'shutting down' });
    if (!app.store.synced()) return reply.status(503).send({ status: 'session cache not synced' });
    // Without its Pod cache the replica could dial nothing (the Pod identity check).
    if (!app.store.podsSynced()) return reply.status(503).send({ status: 'pod cache not synced' });
    return reply.send({ status: 'ok' });
  });

  app.get('/metrics', { config }, () => {
    throw new ProblemError(
      'not-found',
      `/metrics is served on the metrics port (${app.config.metricsPort}, GATEWAY_METRICS_PORT), not the API port`,
    );
  });

  app.get('/openapi.json', { config }, () => app.openApiDocument());
  done();
}
