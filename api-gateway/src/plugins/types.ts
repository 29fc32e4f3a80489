/** Decorations the gateway's plugins add to fastify, typed once for every route. */
import type { ActivityReporter } from '../activity/reporter.js';
import type { Principal } from '../auth/keys.js';
import type { GatewayConfig } from '../config.js';
import type { ByteBudget } from '../limits/byte-budget.js';
import type { CpuMeters } from '../limits/cpu-meter.js';
import type { GatewayMetrics } from '../metrics.js';
import type { ExecService } from '../service/exec-service.js';
import type { SessionsService } from '../service/sessions-service.js';
import type { ExecTransport } from '../exec/types.js';
import type { TransportKind } from '../sessions/model.js';
import type { SessionStore } from '../sessions/store.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Validated gateway configuration (plugins/config.ts). */
    config: GatewayConfig;
    /** Session cache and writes (plugins/store.ts). */
    store: SessionStore;
    /** One exec transport per execTransport value (plugins/transports.ts). */
    transports: Record<TransportKind, ExecTransport>;
    /** Activity reporter (plugins/activity.ts). */
    activity: ActivityReporter;
    /** Session operations (plugins/services.ts). */
    sessions: SessionsService;
    /** Exec and file operations (plugins/services.ts). */
    execs: ExecService;
    /** Budget of large answers held at once (plugins/limits.ts). */
    answerBudget: ByteBudget;
    /** Each API key's share of the CPU for reading agent answers (plugins/limits.ts). */
    cpuMeters: CpuMeters;
    /** Prometheus instruments (plugins/metrics.ts). */
    metrics: GatewayMetrics;
    /** True from the first signal on: /readyz fails while connections are still served (plugins/shutdown.ts). */
    draining(): boolean;
    /** Starts draining and resolves after `ms`; close() comes after (plugins/shutdown.ts). */
    drain(ms: number): Promise<void>;
  }
  interface FastifyRequest {
    /** The authenticated caller; set by plugins/auth.ts on every non-public route. */
    principal: Principal;
  }
  interface FastifyContextConfig {
    /** Routes that need no API key (health, OpenAPI). */
    public?: boolean;
  }
}
