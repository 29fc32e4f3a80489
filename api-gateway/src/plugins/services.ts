/**
 * The services every route, MCP tool and the E2B API share, built once from `AppDeps` and put on
 * the instance by this one plugin (issue 33: it replaced one pass-through plugin per dependency).
 * Routes read them as `app.<name>`; the closable dependencies are released when the app closes,
 * after in-flight requests finished.
 */
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

import type { ActivityReporter } from '../activity/reporter.js';
import type { AppDeps } from '../app.js';
import type { GatewayConfig } from '../config.js';
import type { AgentInteractive } from '../exec/agent/agent-interactive.js';
import type { ExecTransport } from '../exec/types.js';
import type { GatewayMetrics } from '../metrics.js';
import { CodeService } from '../service/code-service.js';
import { ExecService } from '../service/exec-service.js';
import { ProcessService } from '../service/process-service.js';
import { SessionsService } from '../service/sessions-service.js';
import { SnapshotsService } from '../service/snapshots-service.js';
import { WatchService } from '../service/watch-service.js';
import type { TransportKind } from '../sessions/model.js';
import type { SessionStore } from '../sessions/store.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Validated gateway configuration. */
    config: GatewayConfig;
    /** Session cache and writes (informer-backed in production, a fake in tests). */
    store: SessionStore;
    /** One exec transport per execTransport value. */
    transports: Record<TransportKind, ExecTransport>;
    /** Activity reporter (throttled and patching the CR in production, a recorder in tests). */
    activity: ActivityReporter;
    /** Session operations. */
    sessions: SessionsService;
    /** Exec and file operations. */
    execs: ExecService;
    /** The Agent's terminal and port dialling; undefined without it (those routes answer 501). */
    interactive: AgentInteractive | undefined;
    /** Background processes of sessions. */
    processes: ProcessService;
    /** Code runs and contexts of sessions (ADR 0033). */
    codeRuns: CodeService;
    /** File watches of sessions (ADR 0033). */
    fileWatches: WatchService;
    /** Snapshots and forks (docs/snapshots.md); undefined without a snapshot API (routes answer 501). */
    snapshots: SnapshotsService | undefined;
  }
}

/** What this plugin puts on the instance: the one typed list of the shared services. */
export type GatewayServices = Pick<
  FastifyInstance,
  | 'config'
  | 'store'
  | 'transports'
  | 'activity'
  | 'sessions'
  | 'execs'
  | 'interactive'
  | 'processes'
  | 'codeRuns'
  | 'fileWatches'
  | 'snapshots'
>;

/** Options: the app's dependencies and its metrics (the exec service counts into them). */
export interface ServicesPluginOptions {
  deps: Pick<AppDeps, 'config' | 'store' | 'transports' | 'activity' | 'interactive' | 'snapshots'>;
  metrics: GatewayMetrics;
}

/**
 * Builds the services from the dependencies. Without `interactive` (tests built on fake
 * transports) the process, terminal, port, code and watch routes answer 501 `not-supported`.
 */
export function createServices(opts: ServicesPluginOptions): GatewayServices {
  const { config, store, transports, activity, interactive, snapshots } = opts.deps;
  const dialPolicy = { address: config.addressPolicy, podIdentityCheck: config.podIdentityCheck };
  const execs = new ExecService({
    store,
    transports,
    activity,
    limits: config.exec,
    maxFileBytes: config.maxFileBytes,
    dialPolicy,
    metrics: opts.metrics,
  });
  const sessions = new SessionsService(store, config.policy, dialPolicy, config.tenants);
  return {
    config,
    store,
    transports,
    activity,
    sessions,
    execs,
    interactive,
    processes: new ProcessService({ execs, activity, processes: interactive?.processes }),
    codeRuns: new CodeService({ execs, activity, code: interactive?.code }),
    fileWatches: new WatchService({ execs, store, watch: interactive?.watch }),
    snapshots: snapshots ? new SnapshotsService(snapshots, store, sessions, config.tenants) : undefined,
  };
}

export default fp<ServicesPluginOptions>(
  (app: FastifyInstance, opts: ServicesPluginOptions, done: (err?: Error) => void) => {
    const services = createServices(opts);
    app.decorate('config', services.config);
    app.decorate('store', services.store);
    app.decorate('transports', services.transports);
    app.decorate('activity', services.activity);
    app.decorate('sessions', services.sessions);
    app.decorate('execs', services.execs);
    app.decorate('interactive', services.interactive);
    app.decorate('processes', services.processes);
    app.decorate('codeRuns', services.codeRuns);
    app.decorate('fileWatches', services.fileWatches);
    app.decorate('snapshots', services.snapshots);
    const { store, transports, activity } = opts.deps;
    const closeStore = store.close?.bind(store);
    if (closeStore) app.addHook('onClose', async () => closeStore());
    app.addHook('onClose', (_instance: FastifyInstance, hookDone: () => void) => {
      for (const t of Object.values(transports)) t.close?.();
      hookDone();
    });
    const flush = activity.flush?.bind(activity);
    if (flush) app.addHook('onClose', async () => flush());
    done();
  },
  { name: 'services', fastify: '5.x' },
);
