/**
 * Decorates the app with the code interpreter's and file watching's services (ADR 0033), shared
 * by the REST routes and the MCP tools. Without the Agent's interactive calls (tests built on fake
 * transports) every such route answers 501 `not-supported`.
 */
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

import { CodeService } from '../service/code-service.js';
import { WatchService } from '../service/watch-service.js';
import './interactive.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Code runs and contexts of sessions (plugins/code.ts). */
    codeRuns: CodeService;
    /** File watches of sessions (plugins/code.ts). */
    fileWatches: WatchService;
  }
}

export default fp(
  (app: FastifyInstance, _opts: unknown, done: (err?: Error) => void) => {
    app.decorate(
      'codeRuns',
      new CodeService({ execs: app.execs, activity: app.activity, code: app.interactive?.code }),
    );
    app.decorate(
      'fileWatches',
      new WatchService({ execs: app.execs, store: app.store, watch: app.interactive?.watch }),
    );
    done();
  },
  { name: 'code', fastify: '5.x', dependencies: ['interactive'] },
);
