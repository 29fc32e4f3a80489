/** Decorates the app with the activity reporter and sends its pending patches when the app closes. */
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

import type { ActivityReporter } from '../activity/reporter.js';
import './types.js';

/** Options: the reporter (throttled and patching the CR in production, a recorder in tests). */
export interface ActivityPluginOptions {
  activity: ActivityReporter & { flush?: () => Promise<void> };
}

export default fp<ActivityPluginOptions>(
  (app: FastifyInstance, opts: ActivityPluginOptions, done: (err?: Error) => void) => {
    app.decorate('activity', opts.activity);
    const flush = opts.activity.flush?.bind(opts.activity);
    if (flush) app.addHook('onClose', async () => flush());
    done();
  },
  { name: 'activity', fastify: '5.x', dependencies: ['store'] },
);
