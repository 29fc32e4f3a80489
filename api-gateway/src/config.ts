/**
 * Gateway configuration: environment variables validated against a JSON schema at boot (fail fast).
 * Only server.ts reads process.env; everything else receives a GatewayConfig. Every key below is
 * documented with its meaning, default and why; the Helm chart maps its values 1:1 to these names.
 */
import { ENV_MAX_TOTAL_BYTES, otelEnvSchema, tracingConfig, type TracingConfig } from '@sandbox-platform/api';
import { Ajv } from 'ajv';

import { consoleConfig, consoleEnvSchema, type ConsoleConfig } from './console/config.js';
import { previewConfig, previewEnvSchema, type PreviewConfig } from './preview/config.js';
import { auditConfig, auditEnvSchema, type AuditConfig } from './audit/config.js';
import type { AddressPolicy } from './sessions/address.js';

/** Raw environment schema. Numbers are coerced from strings; unknown variables are ignored. */
const envSchema = {
  type: 'object',
  required: ['GATEWAY_API_KEYS_FILE', 'SANDBOX_MASTER_KEY_FILE', 'GATEWAY_NAMESPACES'],
  properties: {
    /** Listen port of the HTTP server. */
    GATEWAY_PORT: { type: 'integer', minimum: 0, maximum: 65535, default: 8080 },
    /**
     * Port of /metrics (Prometheus text), a small server of its own (no auth, nothing else): the
     * API port answers 404 for /metrics, so a NetworkPolicy or scrape config opens one without the
     * other and scrapes never pass the API's auth, limits or tracing. 0: any free port (tests).
     * Must differ from GATEWAY_PORT. Chart: gateway.metricsPort.
     */
    GATEWAY_METRICS_PORT: { type: 'integer', minimum: 0, maximum: 65535, default: 9090 },
    /** Listen address; 0.0.0.0 so the pod IP is reachable. */
    GATEWAY_HOST: { type: 'string', minLength: 1, default: '0.0.0.0' },
    /** winston level: error, warn, info, debug. */
    GATEWAY_LOG_LEVEL: { type: 'string', enum: ['error', 'warn', 'info', 'debug'], default: 'info' },
    /** JSON file of API keys (see docs/gateway.md); the chart mounts it from a Secret. Required. */
    GATEWAY_API_KEYS_FILE: { type: 'string', minLength: 1 },
    /** File holding the master key the agent tokens are derived from (>= 32 bytes). Required. */
    SANDBOX_MASTER_KEY_FILE: { type: 'string', minLength: 1 },
    /**
     * Comma-separated namespaces the gateway serves. One informer per namespace (least privilege:
     * a namespaced Role per namespace instead of a cluster-wide watch). Every API key's namespaces
     * must be among them. Required.
     */
    GATEWAY_NAMESPACES: { type: 'string', minLength: 1 },
    /** Dial loopback pod IPs (127.0.0.0/8, ::1). Tests only: agents there run on the test host. */
    GATEWAY_ALLOW_LOOPBACK_POD_IPS: { type: 'boolean', default: false },
    /**
     * The Pod identity check (sessions/pod-identity.ts, ADR 0027): a session's Pod is dialed only
     * when the gateway's own Pod cache shows the Pod named in its status in its namespace,
     * controlled by it, Ready, not being deleted, with that IP (needs `pods: get, list, watch` in
     * each served namespace). Default true. false exists only for the benchmark's on/off comparison
     * and to show the security tests failing without the check: never turn it off in a deployment.
     */
    GATEWAY_POD_IDENTITY_CHECK: { type: 'boolean', default: true },
    /** Port of the in-pod agent. Only tests change it (a local agent); clients can never choose it. */
    GATEWAY_AGENT_PORT: { type: 'integer', minimum: 1, maximum: 65535, default: 8090 },
    /**
     * Lowest and highest port of a sandbox the port route (/v1/sessions/{name}/ports/{port}/...)
     * proxies to; the agent port is refused whatever the range. The chart's NetworkPolicy admits
     * the gateway to sandbox pods on exactly this range (gateway.ports.allowed). Default 1024 to
     * 65535: unprivileged ports, where dev servers listen (3000, 5000, 8000, 8080...).
     */
    GATEWAY_PROXY_PORT_MIN: { type: 'integer', minimum: 1, maximum: 65535, default: 1024 },
    GATEWAY_PROXY_PORT_MAX: { type: 'integer', minimum: 1, maximum: 65535, default: 65535 },
    /**
     * Upstream connections (open or kept alive) the port route holds to sandbox servers for one API
     * key; a request past it waits for one of the key's own sockets, never another key's, so one
     * tenant holding many connections cannot starve the others.
     */
    GATEWAY_PORT_PROXY_MAX_SOCKETS_PER_KEY: { type: 'integer', minimum: 1, maximum: 4096, default: 64 },
    /** Seconds a kept-alive upstream connection of the port route may stay idle before it is closed. */
    GATEWAY_PORT_PROXY_IDLE_TIMEOUT_SECONDS: { type: 'integer', minimum: 1, maximum: 3600, default: 30 },
    /**
     * Forward `Cookie` to sandbox servers and `Set-Cookie` back on the port route. Default false:
     * every session's port route shares the gateway's origin, so a cookie set by one sandbox's
     * server would be sent to every other's.
     */
    GATEWAY_PORT_PROXY_FORWARD_COOKIES: { type: 'boolean', default: false },
    /**
     * Comma-separated origins (scheme://host[:port]) whose pages may open the gateway's WebSockets
     * (terminal, port route) besides the gateway's own origin. An upgrade without Origin (not a
     * browser) or from the same origin (Origin's host is the request's Host) is always allowed;
     * any other is refused with 403 before the upgrade. Default: none.
     */
    GATEWAY_ALLOWED_ORIGINS: { type: 'string', default: '' },
    /** Idle timeout set on sessions whose request names none (the CRD default is 1800). */
    GATEWAY_DEFAULT_IDLE_TIMEOUT_SECONDS: { type: 'integer', minimum: 1, default: 1800 },
    /** Largest idleTimeoutSeconds a caller may ask for (0, never collected, is refused). */
    GATEWAY_MAX_IDLE_TIMEOUT_SECONDS: { type: 'integer', minimum: 1, default: 7200 },
    /** Largest maxLifetimeSeconds a caller may ask for; also set on sessions that name none. */
    GATEWAY_MAX_LIFETIME_SECONDS: { type: 'integer', minimum: 60, default: 86400 },
    /** Comma-separated execTransport values callers may choose. */
    GATEWAY_ALLOWED_EXEC_TRANSPORTS: { type: 'string', default: 'Agent,KubernetesExec' },
    /** Largest exec timeoutSeconds (the agent's own maximum is 300). */
    GATEWAY_MAX_EXEC_TIMEOUT_SECONDS: { type: 'integer', minimum: 1, maximum: 300, default: 300 },
    /** Exec timeout when the request names none (the agent's default is 60). */
    GATEWAY_DEFAULT_EXEC_TIMEOUT_SECONDS: { type: 'integer', minimum: 1, maximum: 300, default: 60 },
    /** Added to timeoutSeconds for the overall deadline of a forwarded exec (queueing, transfer). */
    GATEWAY_EXEC_DEADLINE_MARGIN_SECONDS: { type: 'integer', minimum: 1, default: 10 },
    /** Seconds a call waits for a not-Ready session when the request names no waitSeconds. */
    GATEWAY_DEFAULT_WAIT_SECONDS: { type: 'integer', minimum: 0, default: 30 },
    /** Upper bound of waitSeconds. */
    GATEWAY_MAX_WAIT_SECONDS: { type: 'integer', minimum: 0, default: 120 },
    /** Largest JSON request body in bytes. */
    GATEWAY_MAX_BODY_BYTES: { type: 'integer', minimum: 1024, default: 1048576 },
    /**
     * Decoded stdin bytes one streamed exec (an NDJSON exec/stream body) may send in all; past it
     * the call is stopped (payload-too-large). Each line is bounded apart (1 MiB, the agent's).
     */
    GATEWAY_MAX_EXEC_STDIN_STREAM_BYTES: { type: 'integer', minimum: 1024, default: 67108864 },
    /** Largest file upload or download in bytes. */
    GATEWAY_MAX_FILE_BYTES: { type: 'integer', minimum: 1024, default: 16777216 },
    /**
     * Output cap per stream (stdout, stderr) of a command. KubernetesExec applies it; the agent
     * applies its own (SANDBOX_AGENT_OUTPUT_CAP_BYTES, same default), and an agent answer claiming
     * more is refused (502 agent-protocol-error). It also bounds what the gateway reads of an
     * agent's answer, buffered or streamed: 12x the cap (JSON escaping) + 64 KiB.
     */
    GATEWAY_MAX_OUTPUT_BYTES: { type: 'integer', minimum: 1024, maximum: 16777216, default: 1048576 },
    /**
     * Largest /mcp body. MCP write_file carries the file inside JSON-RPC, so this bounds it too
     * (about 3/4 of it as base64); larger files go through the REST upload, which streams.
     */
    GATEWAY_MCP_MAX_BODY_BYTES: { type: 'integer', minimum: 1024, default: 1048576 },
    /** Seconds a client may take to send its request headers (slow headers are cut: 408). */
    GATEWAY_HEADERS_TIMEOUT_SECONDS: { type: 'integer', minimum: 1, maximum: 300, default: 10 },
    /**
     * Seconds a client may take to send its whole request, headers and body (an upload included),
     * counted from its first byte; then 408 and the connection is closed. Not the time to answer:
     * an exec may run for minutes after its request arrived.
     */
    GATEWAY_REQUEST_TIMEOUT_SECONDS: { type: 'integer', minimum: 1, maximum: 3600, default: 60 },
    /**
     * Seconds the gateway waits for the API server to answer one REST call (creates, reads,
     * patches, deletes, the watches' lists; not the watches themselves). A call over a dead
     * connection would otherwise hang its caller's request forever; past it the caller gets 503
     * kubernetes-unavailable with Retry-After.
     */
    GATEWAY_KUBE_API_TIMEOUT_SECONDS: { type: 'integer', minimum: 1, maximum: 300, default: 15 },
    /** Seconds an idle keep-alive connection stays open (above the usual 60 s of load balancers). */
    GATEWAY_KEEP_ALIVE_TIMEOUT_SECONDS: { type: 'integer', minimum: 1, maximum: 600, default: 72 },
    /**
     * Seconds a large buffered answer (64 KiB or more) may wait for a client that does not read
     * it; then the connection is closed and the memory freed. Streamed answers need no such limit:
     * they wait with backpressure.
     */
    GATEWAY_WRITE_TIMEOUT_SECONDS: { type: 'integer', minimum: 1, maximum: 600, default: 30 },
    /**
     * Bytes of large agent answers and large buffered responses held at once, over all callers
     * (each counted from 64 KiB up). A call that would exceed it is answered 503 overloaded, so
     * unread or slow answers cannot pile up past it. 0: no limit.
     */
    GATEWAY_MAX_BUFFERED_ANSWER_BYTES: { type: 'integer', minimum: 0, default: 100663296 },
    /** Requests of one API key in flight at once (until their response is done); beyond: 429. 0: no limit. */
    GATEWAY_KEY_MAX_CONCURRENT_REQUESTS: { type: 'integer', minimum: 0, default: 32 },
    /** Requests per second of one API key (fixed one-second window); beyond: 429 with Retry-After. 0: no limit. */
    GATEWAY_KEY_MAX_REQUESTS_PER_SECOND: { type: 'integer', minimum: 0, default: 100 },
    /**
     * CPU milliseconds per second one API key's agent answers may cost the gateway (parsing and
     * checking them); past it, that key's agent connections are paused until it is back under
     * (backpressure, nothing refused), so a hostile tenant's answers cannot starve the others.
     * 0: no limit.
     */
    GATEWAY_KEY_ANSWER_CPU_MS_PER_SECOND: { type: 'integer', minimum: 0, maximum: 1000, default: 250 },
    /** Load shedding: answer 503 (Retry-After) while the event loop lags more than this. 0: off. */
    GATEWAY_SHED_EVENT_LOOP_DELAY_MS: { type: 'integer', minimum: 0, default: 1000 },
    /** Load shedding: answer 503 while the V8 heap in use exceeds this many bytes. 0: off. */
    GATEWAY_SHED_HEAP_USED_BYTES: { type: 'integer', minimum: 0, default: 0 },
    /** Load shedding: answer 503 while the resident set exceeds this many bytes (below the memory limit). 0: off. */
    GATEWAY_SHED_RSS_BYTES: { type: 'integer', minimum: 0, default: 0 },
    /** Sessions one API key may have (created through this gateway, counted over its namespaces); beyond: 403 quota-exceeded. 0: no limit. */
    GATEWAY_MAX_SESSIONS_PER_KEY: { type: 'integer', minimum: 0, default: 50 },
    /**
     * Sessions one namespace may have (whoever created them); beyond: 403 quota-exceeded. Keep it at
     * or below the chart's ResourceQuota (sandboxQuota.sessions, 100), so callers get this problem
     * naming the quota instead of the API server's refusal. 0: no limit.
     */
    GATEWAY_MAX_SESSIONS_PER_NAMESPACE: { type: 'integer', minimum: 0, default: 100 },
    /**
     * Total bytes of the env names and values of a created session (UTF-8). The CRD caps each value
     * at 32 KiB and, by CEL, the total; this keeps the gateway at or below the CRD's total, so a
     * request is refused with a clear 422 before it reaches the API server.
     */
    GATEWAY_MAX_SESSION_ENV_BYTES: {
      type: 'integer',
      minimum: 0,
      maximum: ENV_MAX_TOTAL_BYTES,
      default: ENV_MAX_TOTAL_BYTES,
    },
    /** TCP connect timeout to an agent; a connect failure is the only error retried. */
    GATEWAY_CONNECT_TIMEOUT_MS: { type: 'integer', minimum: 50, default: 2000 },
    /** Retries after a connect failure (never after the request was sent). */
    GATEWAY_CONNECT_RETRIES: { type: 'integer', minimum: 0, maximum: 5, default: 2 },
    /** Activity annotation throttle per session (also capped at a third of its idle timeout). */
    GATEWAY_ACTIVITY_THROTTLE_SECONDS: { type: 'integer', minimum: 1, default: 15 },
    /** SIGTERM: keep accepting (readiness failing) this long, so the Service stops routing here first. */
    GATEWAY_SHUTDOWN_DELAY_SECONDS: { type: 'integer', minimum: 0, maximum: 60, default: 5 },
    /** Grace for in-flight requests on SIGTERM before the process exits anyway. */
    GATEWAY_SHUTDOWN_GRACE_SECONDS: { type: 'integer', minimum: 1, default: 330 },
    /**
     * The E2B-compatible API (docs/e2b.md): the control API under /e2b and the sandbox (envd) API
     * under /e2b/envd, for the official e2b SDKs. Default true. Chart: gateway.e2b.enabled.
     */
    GATEWAY_E2B_ENABLED: { type: 'boolean', default: true },
    /**
     * Give sandboxes created through the E2B API a persistent workspace (a PersistentVolumeClaim
     * of the default StorageClass), so that E2B's pause keeps their files. Default true; false:
     * emptyDir workspaces (faster to create), and pause is refused unless the sandbox was created
     * with autoPause. A template naming a SandboxPool never gets one (pooled Pods use emptyDir).
     * Chart: gateway.e2b.persistentWorkspace.
     */
    GATEWAY_E2B_PERSISTENT_WORKSPACE: { type: 'boolean', default: true },
    /** The web console's files (console/config.ts: GATEWAY_CONSOLE_DIR). */
    ...consoleEnvSchema,
    /** Browser previews on origins of their own (preview/config.ts: GATEWAY_PREVIEW_*). */
    ...previewEnvSchema,
    /** The audit trail (audit/config.ts: GATEWAY_AUDIT_URL). */
    ...auditEnvSchema,
    /** The standard OpenTelemetry variables, as the operator reads them (@sandbox-platform/api). */
    ...otelEnvSchema('sandbox-api-gateway', 'request traces'),
  },
} as const;

/** Typed, validated gateway configuration. */
export interface GatewayConfig {
  port: number;
  /** Port of the /metrics server (metrics-server.ts). */
  metricsPort: number;
  host: string;
  logLevel: 'error' | 'warn' | 'info' | 'debug';
  apiKeysFile: string;
  masterKeyFile: string;
  namespaces: string[];
  agentPort: number;
  /** Ports of a sandbox the port route proxies to (inclusive; the agent port never). */
  proxyPorts: { min: number; max: number };
  /** Which pod IPs may be dialed (see sessions/address.ts). */
  addressPolicy: AddressPolicy;
  /** GATEWAY_POD_IDENTITY_CHECK (sessions/pod-identity.ts). */
  podIdentityCheck: boolean;
  /** The port route's upstream connections and cookies (GATEWAY_PORT_PROXY_*). */
  portProxy: PortProxyLimits;
  /** GATEWAY_ALLOWED_ORIGINS, normalised (lower case, no trailing slash). */
  allowedOrigins: string[];
  policy: SessionPolicy;
  exec: ExecLimits;
  maxBodyBytes: number;
  /** Decoded stdin bytes of one streamed exec (GATEWAY_MAX_EXEC_STDIN_STREAM_BYTES). */
  maxExecStdinStreamBytes: number;
  maxFileBytes: number;
  mcpMaxBodyBytes: number;
  server: ServerLimits;
  tenants: TenantLimits;
  shedding: SheddingLimits;
  activityThrottleMs: number;
  /** GATEWAY_KUBE_API_TIMEOUT_SECONDS in ms: the deadline of each REST call to the API server. */
  kubeApiTimeoutMs: number;
  shutdownDelayMs: number;
  shutdownGraceMs: number;
  /** The E2B-compatible API (GATEWAY_E2B_*). */
  e2b: { enabled: boolean; persistentWorkspace: boolean };
  /** The web console (GATEWAY_CONSOLE_DIR); undefined: /console is not served. */
  console?: ConsoleConfig;
  /** Browser previews (GATEWAY_PREVIEW_*); undefined: off. */
  preview?: PreviewConfig;
  /** The egress proxy's audit service (GATEWAY_AUDIT_URL); undefined: off. */
  audit?: AuditConfig;
  /** OTEL_*: undefined (tracing off) while OTEL_EXPORTER_OTLP_ENDPOINT is empty. */
  tracing?: TracingConfig;
}

/** The port route's upstream limits. */
export interface PortProxyLimits {
  maxSocketsPerKey: number;
  idleTimeoutMs: number;
  forwardCookies: boolean;
}

/** Timeouts of the HTTP server (node:http), in milliseconds. */
export interface ServerLimits {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
  writeTimeoutMs: number;
  /** 0: no limit. */
  maxBufferedAnswerBytes: number;
}

/** Per-API-key limits (0: no limit). */
export interface TenantLimits {
  maxConcurrentRequests: number;
  maxRequestsPerSecond: number;
  maxSessionsPerKey: number;
  maxSessionsPerNamespace: number;
  /** CPU ms per second for reading one key's agent answers. */
  answerCpuMsPerSecond: number;
}

/** Load shedding thresholds (0: that check is off). */
export interface SheddingLimits {
  maxEventLoopDelayMs: number;
  maxHeapUsedBytes: number;
  maxRssBytes: number;
}

/**
 * Limits on the spec a caller may ask for, beyond the platform's admission policy (which decides
 * the image, runtime class, scheduling and size for the gateway and kubectl alike: ADR 0028).
 */
export interface SessionPolicy {
  /** Total bytes of env names and values of a session. */
  maxEnvBytes: number;
  defaultIdleTimeoutSeconds: number;
  maxIdleTimeoutSeconds: number;
  maxLifetimeSeconds: number;
  allowedExecTransports: Array<'Agent' | 'KubernetesExec'>;
}

/** Limits of exec forwarding. */
export interface ExecLimits {
  maxTimeoutSeconds: number;
  defaultTimeoutSeconds: number;
  deadlineMarginMs: number;
  defaultWaitSeconds: number;
  maxWaitSeconds: number;
  maxOutputBytes: number;
  connectTimeoutMs: number;
  connectRetries: number;
}

const TRANSPORTS = new Set(['Agent', 'KubernetesExec']);
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

function list(value: string): string[] {
  return value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/** Every environment variable the gateway reads (the chart may set no other). */
export const CONFIG_KEYS: readonly string[] = Object.keys(envSchema.properties);

/** Validates the environment and returns the config; throws one error naming every problem. */
export function loadConfig(env: Record<string, string | undefined>): GatewayConfig {
  const ajv = new Ajv({ coerceTypes: true, useDefaults: true, allErrors: true });
  const validate = ajv.compile(envSchema);
  const raw: Record<string, unknown> = {};
  for (const key of Object.keys(envSchema.properties)) if (env[key] !== undefined) raw[key] = env[key];
  if (!validate(raw)) {
    throw new Error(`invalid gateway configuration: ${ajv.errorsText(validate.errors, { dataVar: 'env' })}`);
  }
  return toConfig(raw as RawEnv);
}

type RawEnv = {
  [K in keyof typeof envSchema.properties]: (typeof envSchema.properties)[K] extends {
    type: 'integer' | 'number';
  }
    ? number
    : (typeof envSchema.properties)[K] extends { type: 'boolean' }
      ? boolean
      : string;
};

function toConfig(e: RawEnv): GatewayConfig {
  const tracing = tracingConfig(e);
  const namespaces = list(e.GATEWAY_NAMESPACES);
  const bad = namespaces.filter((ns) => !DNS_LABEL.test(ns));
  if (bad.length > 0)
    throw new Error(`invalid gateway configuration: GATEWAY_NAMESPACES: not DNS labels: ${bad.join(', ')}`);
  const transports = list(e.GATEWAY_ALLOWED_EXEC_TRANSPORTS);
  if (transports.length === 0 || transports.some((t) => !TRANSPORTS.has(t))) {
    throw new Error(
      'invalid gateway configuration: GATEWAY_ALLOWED_EXEC_TRANSPORTS: use Agent and/or KubernetesExec',
    );
  }
  checkOrder(
    e.GATEWAY_DEFAULT_IDLE_TIMEOUT_SECONDS,
    e.GATEWAY_MAX_IDLE_TIMEOUT_SECONDS,
    'GATEWAY_DEFAULT_IDLE_TIMEOUT_SECONDS',
  );
  checkOrder(
    e.GATEWAY_DEFAULT_EXEC_TIMEOUT_SECONDS,
    e.GATEWAY_MAX_EXEC_TIMEOUT_SECONDS,
    'GATEWAY_DEFAULT_EXEC_TIMEOUT_SECONDS',
  );
  checkOrder(e.GATEWAY_DEFAULT_WAIT_SECONDS, e.GATEWAY_MAX_WAIT_SECONDS, 'GATEWAY_DEFAULT_WAIT_SECONDS');
  checkOrder(
    e.GATEWAY_HEADERS_TIMEOUT_SECONDS,
    e.GATEWAY_REQUEST_TIMEOUT_SECONDS,
    'GATEWAY_HEADERS_TIMEOUT_SECONDS',
  );
  if (e.GATEWAY_PORT !== 0 && e.GATEWAY_PORT === e.GATEWAY_METRICS_PORT) {
    throw new Error(
      `invalid gateway configuration: GATEWAY_METRICS_PORT (${e.GATEWAY_METRICS_PORT}) must differ from GATEWAY_PORT`,
    );
  }
  return {
    port: e.GATEWAY_PORT,
    metricsPort: e.GATEWAY_METRICS_PORT,
    host: e.GATEWAY_HOST,
    logLevel: e.GATEWAY_LOG_LEVEL as GatewayConfig['logLevel'],
    apiKeysFile: e.GATEWAY_API_KEYS_FILE,
    masterKeyFile: e.SANDBOX_MASTER_KEY_FILE,
    namespaces: [...new Set(namespaces)],
    agentPort: e.GATEWAY_AGENT_PORT,
    proxyPorts: proxyPorts(e.GATEWAY_PROXY_PORT_MIN, e.GATEWAY_PROXY_PORT_MAX),
    addressPolicy: { allowLoopback: e.GATEWAY_ALLOW_LOOPBACK_POD_IPS },
    podIdentityCheck: e.GATEWAY_POD_IDENTITY_CHECK,
    portProxy: {
      maxSocketsPerKey: e.GATEWAY_PORT_PROXY_MAX_SOCKETS_PER_KEY,
      idleTimeoutMs: e.GATEWAY_PORT_PROXY_IDLE_TIMEOUT_SECONDS * 1000,
      forwardCookies: e.GATEWAY_PORT_PROXY_FORWARD_COOKIES,
    },
    allowedOrigins: origins(e.GATEWAY_ALLOWED_ORIGINS),
    policy: {
      maxEnvBytes: e.GATEWAY_MAX_SESSION_ENV_BYTES,
      defaultIdleTimeoutSeconds: e.GATEWAY_DEFAULT_IDLE_TIMEOUT_SECONDS,
      maxIdleTimeoutSeconds: e.GATEWAY_MAX_IDLE_TIMEOUT_SECONDS,
      maxLifetimeSeconds: e.GATEWAY_MAX_LIFETIME_SECONDS,
      allowedExecTransports: transports as SessionPolicy['allowedExecTransports'],
    },
    exec: {
      maxTimeoutSeconds: e.GATEWAY_MAX_EXEC_TIMEOUT_SECONDS,
      defaultTimeoutSeconds: e.GATEWAY_DEFAULT_EXEC_TIMEOUT_SECONDS,
      deadlineMarginMs: e.GATEWAY_EXEC_DEADLINE_MARGIN_SECONDS * 1000,
      defaultWaitSeconds: e.GATEWAY_DEFAULT_WAIT_SECONDS,
      maxWaitSeconds: e.GATEWAY_MAX_WAIT_SECONDS,
      maxOutputBytes: e.GATEWAY_MAX_OUTPUT_BYTES,
      connectTimeoutMs: e.GATEWAY_CONNECT_TIMEOUT_MS,
      connectRetries: e.GATEWAY_CONNECT_RETRIES,
    },
    maxBodyBytes: e.GATEWAY_MAX_BODY_BYTES,
    maxExecStdinStreamBytes: e.GATEWAY_MAX_EXEC_STDIN_STREAM_BYTES,
    maxFileBytes: e.GATEWAY_MAX_FILE_BYTES,
    mcpMaxBodyBytes: e.GATEWAY_MCP_MAX_BODY_BYTES,
    server: {
      headersTimeoutMs: e.GATEWAY_HEADERS_TIMEOUT_SECONDS * 1000,
      requestTimeoutMs: e.GATEWAY_REQUEST_TIMEOUT_SECONDS * 1000,
      keepAliveTimeoutMs: e.GATEWAY_KEEP_ALIVE_TIMEOUT_SECONDS * 1000,
      writeTimeoutMs: e.GATEWAY_WRITE_TIMEOUT_SECONDS * 1000,
      maxBufferedAnswerBytes: e.GATEWAY_MAX_BUFFERED_ANSWER_BYTES,
    },
    tenants: {
      maxConcurrentRequests: e.GATEWAY_KEY_MAX_CONCURRENT_REQUESTS,
      maxRequestsPerSecond: e.GATEWAY_KEY_MAX_REQUESTS_PER_SECOND,
      maxSessionsPerKey: e.GATEWAY_MAX_SESSIONS_PER_KEY,
      maxSessionsPerNamespace: e.GATEWAY_MAX_SESSIONS_PER_NAMESPACE,
      answerCpuMsPerSecond: e.GATEWAY_KEY_ANSWER_CPU_MS_PER_SECOND,
    },
    shedding: {
      maxEventLoopDelayMs: e.GATEWAY_SHED_EVENT_LOOP_DELAY_MS,
      maxHeapUsedBytes: e.GATEWAY_SHED_HEAP_USED_BYTES,
      maxRssBytes: e.GATEWAY_SHED_RSS_BYTES,
    },
    activityThrottleMs: e.GATEWAY_ACTIVITY_THROTTLE_SECONDS * 1000,
    kubeApiTimeoutMs: e.GATEWAY_KUBE_API_TIMEOUT_SECONDS * 1000,
    shutdownDelayMs: e.GATEWAY_SHUTDOWN_DELAY_SECONDS * 1000,
    shutdownGraceMs: e.GATEWAY_SHUTDOWN_GRACE_SECONDS * 1000,
    e2b: { enabled: e.GATEWAY_E2B_ENABLED, persistentWorkspace: e.GATEWAY_E2B_PERSISTENT_WORKSPACE },
    console: consoleConfig(e),
    preview: previewConfig(e),
    audit: auditConfig(e),
    ...(tracing ? { tracing } : {}),
  };
}

function checkOrder(value: number, max: number, key: string): void {
  if (value > max)
    throw new Error(`invalid gateway configuration: ${key} (${value}) exceeds its maximum (${max})`);
}

/** GATEWAY_ALLOWED_ORIGINS: each entry an http(s) origin (scheme://host[:port]), else a configuration error. */
function origins(value: string): string[] {
  return list(value).map((o) => {
    let url: URL | undefined;
    try {
      url = new URL(o);
    } catch {
      url = undefined;
    }
    const bare = url && url.pathname === '/' && !url.search && !url.hash && !url.username;
    if (!url || !bare || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
      throw new Error(`invalid gateway configuration: GATEWAY_ALLOWED_ORIGINS: not an http(s) origin: ${o}`);
    }
    return url.origin;
  });
}

/** The proxied port range; a range that is empty is a configuration error. */
function proxyPorts(min: number, max: number): { min: number; max: number } {
  if (min > max) {
    throw new Error(
      `invalid gateway configuration: GATEWAY_PROXY_PORT_MIN (${min}) exceeds GATEWAY_PROXY_PORT_MAX (${max})`,
    );
  }
  return { min, max };
}
