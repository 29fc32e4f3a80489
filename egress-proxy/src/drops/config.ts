/**
 * The egress drop reporter's configuration, from the environment (read only by drops/main.ts).
 * Every key is set by the chart (templates/egress-drop-reporter.yaml, egressProxy.dropAudit).
 */
import { int, logLevel, required } from '../env.js';

/** Validated configuration. */
export interface DropReporterConfig {
  /** DROPS_AUDIT_URL (required): the egress proxy's audit service, e.g. http://<proxy service>.<ns>.svc:8091. */
  auditUrl: string;
  /** DROPS_TOKEN_FILE (required): the bearer token, from the Secret the proxy publishes (never the master key). */
  tokenFile: string;
  /** DROPS_NFLOG_GROUP (100): the NFLOG group the NetworkPolicy enforcer logs dropped packets to (kube-router: 100). */
  nflogGroup: number;
  /** DROPS_HELPER (/usr/local/bin/sandbox-nflog): the NFLOG helper (test-e2e/images/src/sandbox-nflog.c). */
  helper: string;
  /** DROPS_BATCH_MS (1000): longest a drop waits for its batch. */
  batchMs: number;
  /** DROPS_BATCH_MAX (100): most drops per request to the audit service. */
  batchMax: number;
  /** DROPS_QUEUE_MAX (1000): most drops waiting; more are counted and dropped. */
  queueMax: number;
  /** DROPS_STATS_SECONDS (60): how often the counters are logged (when any changed). */
  statsSeconds: number;
  /** LOG_LEVEL (info): error, warn, info or debug. */
  logLevel: 'error' | 'warn' | 'info' | 'debug';
}

/** Reads and validates the configuration; throws naming the key at fault. */
export function loadDropReporterConfig(env: NodeJS.ProcessEnv): DropReporterConfig {
  const auditUrl = required(env, 'DROPS_AUDIT_URL');
  let url: URL;
  try {
    url = new URL(auditUrl);
  } catch {
    throw new Error(`DROPS_AUDIT_URL is not a URL: ${auditUrl}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new Error('DROPS_AUDIT_URL must be http(s)');
  return {
    auditUrl,
    tokenFile: required(env, 'DROPS_TOKEN_FILE'),
    nflogGroup: int(env, 'DROPS_NFLOG_GROUP', [100, 0, 65535]),
    helper: env.DROPS_HELPER || '/usr/local/bin/sandbox-nflog',
    batchMs: int(env, 'DROPS_BATCH_MS', [1000, 10, 60_000]),
    batchMax: int(env, 'DROPS_BATCH_MAX', [100, 1, 500]),
    queueMax: int(env, 'DROPS_QUEUE_MAX', [1000, 1, 100_000]),
    statsSeconds: int(env, 'DROPS_STATS_SECONDS', [60, 1, 86_400]),
    logLevel: logLevel(env),
  };
}
