/** Decorates the app with one exec transport per execTransport value and closes their pools on close. */
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

import type { ExecTransport } from '../exec/types.js';
import type { TransportKind } from '../sessions/model.js';
import './types.js';

/** Options: the transports (real ones from compose.ts, fakes in tests). */
export interface TransportsPluginOptions {
  transports: Record<TransportKind, ExecTransport & { close?: () => void }>;
}

export default fp<TransportsPluginOptions>(
  (app: FastifyInstance, opts: TransportsPluginOptions, done: (err?: Error) => void) => {
    app.decorate('transports', opts.transports);
    app.addHook('onClose', (_instance: FastifyInstance, hookDone: () => void) => {
      for (const t of Object.values(opts.transports)) t.close?.();
      hookDone();
    });
    done();
  },
  { name: 'transports', fastify: '5.x' },
);
