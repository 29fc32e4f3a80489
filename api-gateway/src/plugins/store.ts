/**
 * Decorates the app with the session store (informer-backed in production, a fake in tests) and
 * stops its watches when the app closes, after in-flight requests finished.
 */
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

import type { SessionStore } from '../sessions/store.js';
import './types.js';

/** Options: the store, optionally closable. */
export interface StorePluginOptions {
  store: SessionStore & { close?: () => Promise<void> };
}

export default fp<StorePluginOptions>(
  (app: FastifyInstance, opts: StorePluginOptions, done: (err?: Error) => void) => {
    app.decorate('store', opts.store);
    const close = opts.store.close?.bind(opts.store);
    if (close) app.addHook('onClose', async () => close());
    done();
  },
  { name: 'store', fastify: '5.x' },
);
