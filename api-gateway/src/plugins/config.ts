/** Decorates the app with its validated configuration. */
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

import type { GatewayConfig } from '../config.js';
import './types.js';

/** Options: the config built by loadConfig (or by a test). */
export interface ConfigPluginOptions {
  config: GatewayConfig;
}

export default fp<ConfigPluginOptions>(
  (app: FastifyInstance, opts: ConfigPluginOptions, done: (err?: Error) => void) => {
    app.decorate('config', opts.config);
    done();
  },
  { name: 'config', fastify: '5.x' },
);
