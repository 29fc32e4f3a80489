/**
 * Wires the session and exec services from the store, the transports and the activity reporter,
 * and flushes pending activity patches when the app closes.
 */
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

import type { ActivityReporter } from '../activity/reporter.js';
import type { ExecTransport } from '../exec/types.js';
import { ExecService } from '../service/exec-service.js';
import { SessionsService } from '../service/sessions-service.js';
import type { TransportKind } from '../sessions/model.js';
import './types.js';

/** Options: one transport per execTransport value, and the activity reporter. */
export interface ServicesPluginOptions {
  transports: Record<TransportKind, ExecTransport & { close?: () => void }>;
  activity: ActivityReporter & { flush?: () => Promise<void> };
}

export default fp<ServicesPluginOptions>(
  (app: FastifyInstance, opts: ServicesPluginOptions, done: (err?: Error) => void) => {
    app.decorate('sessions', new SessionsService(app.store, app.config.policy));
    app.decorate(
      'execs',
      new ExecService({
        store: app.store,
        transports: opts.transports,
        activity: opts.activity,
        limits: app.config.exec,
        maxFileBytes: app.config.maxFileBytes,
        metrics: app.metrics,
      }),
    );
    app.addHook('onClose', async () => {
      await opts.activity.flush?.();
      for (const t of Object.values(opts.transports)) t.close?.();
    });
    done();
  },
  { name: 'services', fastify: '5.x', dependencies: ['config', 'store', 'metrics'] },
);
