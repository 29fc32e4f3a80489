/**
 * Unauthenticated operational routes: liveness, readiness (every session cache synced), Prometheus
 * metrics and the OpenAPI document. They reveal no session data.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';

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
    return reply.send({ status: 'ok' });
  });

  app.get('/metrics', { config }, async (_request, reply: FastifyReply) => {
    const body = await app.metrics.registry.metrics();
    return reply.type(app.metrics.registry.contentType).send(body);
  });

  app.get('/openapi.json', { config }, () => app.openApiDocument());
  done();
}
