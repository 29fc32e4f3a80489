/** Decorates the app with its metrics and times every request by route pattern. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

import type { GatewayMetrics } from '../metrics.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Prometheus instruments. */
    metrics: GatewayMetrics;
  }
}

/** Options: the instruments (one registry per app). */
export interface MetricsPluginOptions {
  metrics: GatewayMetrics;
}

export default fp<MetricsPluginOptions>(
  (app: FastifyInstance, opts: MetricsPluginOptions, done: (err?: Error) => void) => {
    app.decorate('metrics', opts.metrics);
    // A callback hook (not async): it runs on every response and must not add a promise hop.
    app.addHook('onResponse', (request: FastifyRequest, reply: FastifyReply, hookDone: () => void) => {
      const route = request.routeOptions.url ?? 'unmatched';
      const labels = { method: request.method, route, status: String(reply.statusCode) };
      opts.metrics.httpDuration.observe(labels, reply.elapsedTime / 1000);
      request.log.debug(
        { method: request.method, route, status: reply.statusCode, ms: Math.round(reply.elapsedTime) },
        'request done',
      );
      hookDone();
    });
    done();
  },
  { name: 'metrics', fastify: '5.x' },
);
