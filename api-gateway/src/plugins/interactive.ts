/**
 * Decorates the app with the process service and the Agent's interactive calls (terminal and
 * ports dial through them). Without `interactive` (tests built on fake transports) every such
 * route answers 501 `not-supported`.
 */
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

import type { AgentInteractive } from '../exec/agent/agent-interactive.js';
import { ProcessService } from '../service/process-service.js';
import './types.js';

/** Options: the Agent's interactive calls (compose.ts), or none. */
export interface InteractivePluginOptions {
  interactive: AgentInteractive | undefined;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Background processes of sessions (plugins/interactive.ts). */
    processes: ProcessService;
    /** The Agent's terminal and port dialling; undefined without it (plugins/interactive.ts). */
    interactive: AgentInteractive | undefined;
  }
}

export default fp<InteractivePluginOptions>(
  (app: FastifyInstance, opts: InteractivePluginOptions, done: (err?: Error) => void) => {
    app.decorate('interactive', opts.interactive);
    app.decorate(
      'processes',
      new ProcessService({
        execs: app.execs,
        activity: app.activity,
        processes: opts.interactive?.processes,
      }),
    );
    done();
  },
  { name: 'interactive', fastify: '5.x', dependencies: ['services', 'activity'] },
);
