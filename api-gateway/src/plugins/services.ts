/** Wires the session and exec services (shared by REST and MCP) from the decorated dependencies. */
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

import { ExecService } from '../service/exec-service.js';
import { SessionsService } from '../service/sessions-service.js';
import './types.js';

export default fp(
  (app: FastifyInstance, _opts: unknown, done: (err?: Error) => void) => {
    const dialPolicy = { address: app.config.addressPolicy, podIdentityCheck: app.config.podIdentityCheck };
    app.decorate(
      'sessions',
      new SessionsService(app.store, app.config.policy, dialPolicy, app.config.tenants),
    );
    app.decorate(
      'execs',
      new ExecService({
        store: app.store,
        transports: app.transports,
        activity: app.activity,
        limits: app.config.exec,
        maxFileBytes: app.config.maxFileBytes,
        dialPolicy,
        metrics: app.metrics,
      }),
    );
    done();
  },
  {
    name: 'services',
    fastify: '5.x',
    dependencies: ['config', 'store', 'metrics', 'transports', 'activity'],
  },
);
