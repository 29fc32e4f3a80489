/**
 * Operator configuration: environment variables, validated with ajv at start (fail fast, with
 * every problem listed), turned into a typed object. Only main.ts calls loadConfig. The Helm chart
 * maps its values 1:1 to these variables. Every key is documented in ENV_SCHEMA (description) and
 * in OperatorConfig.
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';

import {
  MIN_MASTER_KEY_BYTES,
  otelEnvSchema,
  tracingConfig,
  type TracingConfig,
} from '@sandbox-platform/api';
import { Ajv } from 'ajv';

import { SNAPSHOT_ENV_SCHEMA, snapshotConfig, type SnapshotConfig } from './snapshot/config.js';
import { LOG_LEVELS, type LogLevel } from './telemetry/logger.js';

const QUANTITY = '^[0-9]+(\\.[0-9]+)?(m|k|M|G|T|Ki|Mi|Gi|Ti)?$';
const LABEL = '[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?';
const DNS_LABEL = `^${LABEL}$`;
/** A DNS subdomain (RFC 1123), as Kubernetes names most objects: dot-separated labels, <= 253 characters. */
const DNS_SUBDOMAIN = `${LABEL}(\\.${LABEL})*`;

/** JSON schema of the environment. Defaults here are the documented defaults. */
export const ENV_SCHEMA = {
  type: 'object',
  required: ['SANDBOX_MASTER_KEY_FILE'],
  properties: {
    SANDBOX_MASTER_KEY_FILE: {
      type: 'string',
      minLength: 1,
      description: `Required. File holding the token master key (>= ${MIN_MASTER_KEY_BYTES} bytes), mounted from the master-key Secret.`,
    },
    WATCH_NAMESPACES: {
      type: 'string',
      default: '',
      pattern: `^(${LABEL}(,${LABEL})*)?$`,
      description:
        'Comma-separated namespaces whose SandboxSessions are reconciled (one watch, LIST and pair of ' +
        'informers each, so namespaced Roles suffice); empty means all namespaces (needs cluster-wide RBAC).',
    },
    WATCH_NAMESPACE: {
      type: 'string',
      default: '',
      pattern: `^(${LABEL})?$`,
      description: 'Alias of WATCH_NAMESPACES for a single namespace; an error when both are set and differ.',
    },
    SANDBOX_DEFAULT_IMAGE: {
      type: 'string',
      minLength: 1,
      default: 'localhost/sandbox-platform/sandbox-agent:dev',
      description: 'Image of sessions whose spec.image is unset.',
    },
    SANDBOX_DEFAULT_CPU_REQUEST: {
      type: 'string',
      pattern: QUANTITY,
      default: '100m',
      description: 'CPU request when spec.resources names no cpu.',
    },
    SANDBOX_DEFAULT_CPU_LIMIT: {
      type: 'string',
      pattern: QUANTITY,
      default: '1',
      description: 'CPU limit when spec.resources names no cpu.',
    },
    SANDBOX_DEFAULT_MEMORY_REQUEST: {
      type: 'string',
      pattern: QUANTITY,
      default: '256Mi',
      description: 'Memory request when spec.resources names no memory.',
    },
    SANDBOX_DEFAULT_MEMORY_LIMIT: {
      type: 'string',
      pattern: QUANTITY,
      default: '1Gi',
      description: 'Memory limit when spec.resources names no memory.',
    },
    SANDBOX_DEFAULT_WORKSPACE_SIZE: {
      type: 'string',
      pattern: QUANTITY,
      default: '1Gi',
      description:
        'Size limit of /workspace when spec.workspace.sizeLimit is unset (the CRD defaults it to 1Gi too).',
    },
    SANDBOX_TMP_SIZE: {
      type: 'string',
      pattern: QUANTITY,
      default: '64Mi',
      description: 'Size limit of the /tmp emptyDir of sandbox Pods.',
    },
    SANDBOX_RUN_AS_USER: {
      type: 'integer',
      minimum: 1,
      maximum: 2147483647,
      default: 1000,
      description: 'UID, GID and fsGroup of sandbox Pods (never 0: the Pods run as non-root).',
    },
    SANDBOX_TERMINATION_GRACE_SECONDS: {
      type: 'integer',
      minimum: 0,
      maximum: 300,
      default: 10,
      description: 'terminationGracePeriodSeconds of sandbox Pods: the agent needs only a moment to stop.',
    },
    SANDBOX_DEFAULT_RUNTIME_CLASS_NAME: {
      type: 'string',
      default: '',
      maxLength: 253,
      pattern: `^(${DNS_SUBDOMAIN})?$`,
      description:
        'RuntimeClass of sessions whose spec.runtimeClassName is unset, and of warm Pods whose pool ' +
        'template names none (e.g. gvisor, for a sandbox kernel between untrusted code and the node); ' +
        'empty: the node default runtime. Applied only while it exists: the operator reads it ' +
        '(get runtimeclasses) at start and every 60 s; while it does not exist those Pods get the ' +
        "node's default runtime, with a warning logged once and the gauge " +
        'sandbox_operator_default_runtime_class_available at 0. A failed read keeps the last verdict ' +
        '(the default, before the first). An explicit spec.runtimeClassName is used as given.',
    },
    SANDBOX_EGRESS_PROXY_URL: {
      type: 'string',
      default: '',
      maxLength: 512,
      pattern: '^(http://[a-z0-9]([-a-z0-9.]*[a-z0-9])?(:[0-9]{1,5})?/?)?$',
      description:
        "The platform egress proxy's URL (the chart sets it when egressProxy.enabled): sandbox Pods get " +
        "it as HTTP_PROXY/HTTPS_PROXY (and lower-case), NO_PROXY for loopback, and the namespace's " +
        'interception CA (ConfigMap sandbox-egress-ca, mounted optional) trusted through ' +
        'NODE_EXTRA_CA_CERTS and a bundle the agent keeps (SSL_CERT_FILE and others). Empty: none.',
    },
    SANDBOX_EGRESS_DNS: {
      type: 'string',
      default: '',
      enum: ['', 'proxy'],
      description:
        "'proxy' (the chart sets it when egressProxy.dns.enabled): sandbox Pods get dnsPolicy None " +
        "with the egress proxy's Service address as their only name server (it answers only names " +
        "their egress rules allow). The operator resolves SANDBOX_EGRESS_PROXY_URL's host at start " +
        '(retrying for 60 s, then exiting). Empty: the cluster DNS (dnsPolicy ClusterFirst).',
    },
    CONCURRENCY: {
      type: 'integer',
      minimum: 1,
      maximum: 256,
      default: 16,
      description:
        'Reconcile workers (different sessions in parallel; one session is never reconciled twice at once).',
    },
    RESYNC_SECONDS: {
      type: 'integer',
      minimum: 10,
      maximum: 86400,
      default: 300,
      description:
        'Period of the full LIST of sessions that re-queues every session (safety net for missed events).',
    },
    REQUEUE_FLOOR_MS: {
      type: 'integer',
      minimum: 10,
      maximum: 60000,
      default: 250,
      description: 'Smallest delay of a deadline requeue, so rounding cannot spin the queue.',
    },
    WAIT_REQUEUE_SECONDS: {
      type: 'integer',
      minimum: 1,
      maximum: 3600,
      default: 5,
      description:
        'Safety requeue while waiting for a child to be deleted (the watch event normally comes first).',
    },
    WORKSPACE_BIND_TIMEOUT_SECONDS: {
      type: 'integer',
      minimum: 1,
      maximum: 86400,
      default: 60,
      description:
        'How long a workspace PersistentVolumeClaim may stay unbound (from its creation or the ' +
        "session's resume) before Ready says WorkspaceNotBound instead of WorkspacePending; a " +
        'provisioner normally binds it within seconds of the Pod being scheduled.',
    },
    POOL_AGENT_PORT: {
      type: 'integer',
      minimum: 1,
      maximum: 65535,
      default: 8090,
      description:
        "Port of a warm Pod's agent the operator binds it on (docs/adr/0016); the agent image's port " +
        '(8090). The chart opens it to the operator in the sandbox NetworkPolicy.',
    },
    POOL_BIND_TIMEOUT_MS: {
      type: 'integer',
      minimum: 50,
      maximum: 60000,
      default: 2000,
      description:
        'Deadline of one bind call to a warm Pod; a Pod that does not answer in time is deleted and ' +
        'the session takes another warm Pod or is created cold.',
    },
    BACKOFF_BASE_MS: {
      type: 'integer',
      minimum: 10,
      maximum: 60000,
      default: 500,
      description: 'Retry delay after a first failed reconcile; doubles per failure, with 20% jitter.',
    },
    BACKOFF_MAX_SECONDS: {
      type: 'integer',
      minimum: 1,
      maximum: 3600,
      default: 300,
      description: 'Cap of the retry delay.',
    },
    API_TIMEOUT_SECONDS: {
      type: 'integer',
      minimum: 1,
      maximum: 300,
      default: 30,
      description:
        'Timeout of each API request (watches excepted): a hung request must not hold a worker forever.',
    },
    LEADER_ELECT: {
      type: 'boolean',
      default: true,
      description: 'Hold a coordination.k8s.io Lease before reconciling, so only one replica works.',
    },
    LEASE_NAME: {
      type: 'string',
      pattern: DNS_LABEL,
      default: 'sandbox-operator',
      description: 'Name of the leader Lease.',
    },
    LEASE_NAMESPACE: {
      type: 'string',
      pattern: `^(${LABEL})?$`,
      default: '',
      description: 'Namespace of the leader Lease; defaults to POD_NAMESPACE.',
    },
    POD_NAMESPACE: {
      type: 'string',
      default: '',
      description: "The operator's own namespace (downward API).",
    },
    POD_NAME: {
      type: 'string',
      default: '',
      description: 'Leader identity (downward API metadata.name); defaults to <hostname>_<random>.',
    },
    LEASE_DURATION_SECONDS: {
      type: 'integer',
      minimum: 2,
      maximum: 3600,
      default: 15,
      description: 'How long a Lease not renewed stays held: the standby takes over after this.',
    },
    LEASE_RENEW_DEADLINE_SECONDS: {
      type: 'integer',
      minimum: 1,
      maximum: 3600,
      default: 10,
      description:
        'The leader gives up (and exits) if it cannot renew for this long; < LEASE_DURATION_SECONDS.',
    },
    LEASE_RETRY_PERIOD_SECONDS: {
      type: 'integer',
      minimum: 1,
      maximum: 600,
      default: 2,
      description: 'Interval of Lease renewals and acquisition attempts; < LEASE_RENEW_DEADLINE_SECONDS.',
    },
    HTTP_PORT: {
      type: 'integer',
      minimum: 0,
      maximum: 65535,
      default: 8080,
      description: 'Port of /healthz and /readyz (0: any free port).',
    },
    METRICS_PORT: {
      type: 'integer',
      minimum: 0,
      maximum: 65535,
      default: 9090,
      description:
        'Port of /metrics, apart from the probes so a scrape policy can open one without the other ' +
        '(0: any free port); must differ from HTTP_PORT.',
    },
    HTTP_HOST: {
      type: 'string',
      default: '0.0.0.0',
      description: 'Address the probe and metrics endpoints bind.',
    },
    ...otelEnvSchema('sandbox-operator', 'reconcile traces'),
    ...SNAPSHOT_ENV_SCHEMA,
    LOG_LEVEL: {
      type: 'string',
      enum: [...LOG_LEVELS],
      default: 'info',
      description: 'error, warn, info (state changes) or debug (steady state too).',
    },
    SHUTDOWN_TIMEOUT_SECONDS: {
      type: 'integer',
      minimum: 1,
      maximum: 600,
      default: 20,
      description:
        'On SIGTERM, how long in-flight reconciles may take to finish; keep it below the Pod grace period.',
    },
  },
} as const;

/** The typed configuration. */
export interface OperatorConfig {
  /** SANDBOX_MASTER_KEY_FILE. */
  readonly masterKeyFile: string;
  /**
   * WATCH_NAMESPACES (or its alias WATCH_NAMESPACE), sorted and distinct; empty = all namespaces
   * (one cluster-wide watch, LIST and pair of informers instead of one per namespace).
   */
  readonly watchNamespaces: readonly string[];
  /** Inputs of buildPod. */
  readonly pod: {
    readonly defaultImage: string;
    readonly defaultResources: {
      readonly requests: { readonly cpu: string; readonly memory: string };
      readonly limits: { readonly cpu: string; readonly memory: string };
    };
    readonly defaultWorkspaceSize: string;
    readonly tmpSize: string;
    readonly runAsUser: number;
    readonly terminationGracePeriodSeconds: number;
    /**
     * SANDBOX_DEFAULT_RUNTIME_CLASS_NAME; undefined when empty. Applied only while the RuntimeClass
     * exists (kube/runtime-class.ts).
     */
    readonly defaultRuntimeClassName?: string;
    /** SANDBOX_EGRESS_PROXY_URL; undefined when empty. */
    readonly egressProxyUrl?: string;
  };
  /** SANDBOX_EGRESS_DNS is 'proxy' (and a proxy URL is set): main.ts resolves its host for the Pods' dnsConfig. */
  readonly egressDnsFromProxy: boolean;
  /** CONCURRENCY. */
  readonly concurrency: number;
  /** RESYNC_SECONDS in ms. */
  readonly resyncMs: number;
  /** REQUEUE_FLOOR_MS. */
  readonly requeueFloorMs: number;
  /** WAIT_REQUEUE_SECONDS in ms. */
  readonly waitRequeueMs: number;
  /** WORKSPACE_BIND_TIMEOUT_SECONDS in ms. */
  readonly workspaceBindTimeoutMs: number;
  /** Warm pools: POOL_AGENT_PORT and POOL_BIND_TIMEOUT_MS. */
  readonly pool: { readonly agentPort: number; readonly bindTimeoutMs: number };
  /** BACKOFF_BASE_MS and BACKOFF_MAX_SECONDS. */
  readonly backoff: { readonly baseMs: number; readonly maxMs: number; readonly jitter: number };
  /** API_TIMEOUT_SECONDS in ms. */
  readonly apiTimeoutMs: number;
  /** Leader election; undefined when LEADER_ELECT=false. */
  readonly leaderElection?: {
    readonly leaseName: string;
    readonly leaseNamespace: string;
    readonly leaseDurationMs: number;
    readonly renewDeadlineMs: number;
    readonly retryPeriodMs: number;
  };
  /** POD_NAME or <hostname>_<random>: the Lease holder identity and Event reportingInstance. */
  readonly identity: string;
  /** HTTP_PORT, METRICS_PORT and HTTP_HOST. */
  readonly http: { readonly port: number; readonly metricsPort: number; readonly host: string };
  /** OTEL_*: undefined (tracing off) while OTEL_EXPORTER_OTLP_ENDPOINT is empty. */
  readonly tracing?: TracingConfig;
  /** LOG_LEVEL. */
  readonly logLevel: LogLevel;
  /** SHUTDOWN_TIMEOUT_SECONDS in ms. */
  readonly shutdownTimeoutMs: number;
  /** SNAPSHOT_*: the object store and limits of snapshots (snapshot/config.ts). */
  readonly snapshots: SnapshotConfig;
}

type Env = Record<string, string | undefined>;
type Parsed = {
  [K in keyof typeof ENV_SCHEMA.properties]: (typeof ENV_SCHEMA.properties)[K] extends {
    type: 'integer' | 'number';
  }
    ? number
    : (typeof ENV_SCHEMA.properties)[K] extends { type: 'boolean' }
      ? boolean
      : string;
};

/** Thrown when the environment is invalid; lists every problem. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/** Validates the environment and returns the typed configuration. */
export function loadConfig(env: Env, host: string = hostname()): OperatorConfig {
  const input: Record<string, string> = {};
  for (const key of Object.keys(ENV_SCHEMA.properties)) {
    const value = env[key];
    if (value !== undefined && value !== '') input[key] = value;
  }
  const ajv = new Ajv({
    allErrors: true,
    coerceTypes: true,
    useDefaults: true,
    strict: true,
    strictTypes: false,
  });
  const validate = ajv.compile<Parsed>(ENV_SCHEMA);
  if (!validate(input)) {
    const problems = (validate.errors ?? []).map(
      (e) => `${e.instancePath.slice(1) || e.params['missingProperty'] || 'env'} ${e.message ?? ''}`,
    );
    throw new ConfigError(`invalid configuration: ${problems.join('; ')}`);
  }
  return toConfig(input, host);
}

function toConfig(p: Parsed, host: string): OperatorConfig {
  return {
    masterKeyFile: p.SANDBOX_MASTER_KEY_FILE,
    watchNamespaces: watchNamespaces(p),
    pod: {
      defaultImage: p.SANDBOX_DEFAULT_IMAGE,
      defaultResources: {
        requests: { cpu: p.SANDBOX_DEFAULT_CPU_REQUEST, memory: p.SANDBOX_DEFAULT_MEMORY_REQUEST },
        limits: { cpu: p.SANDBOX_DEFAULT_CPU_LIMIT, memory: p.SANDBOX_DEFAULT_MEMORY_LIMIT },
      },
      defaultWorkspaceSize: p.SANDBOX_DEFAULT_WORKSPACE_SIZE,
      tmpSize: p.SANDBOX_TMP_SIZE,
      runAsUser: p.SANDBOX_RUN_AS_USER,
      terminationGracePeriodSeconds: p.SANDBOX_TERMINATION_GRACE_SECONDS,
      defaultRuntimeClassName: p.SANDBOX_DEFAULT_RUNTIME_CLASS_NAME || undefined,
      egressProxyUrl: p.SANDBOX_EGRESS_PROXY_URL || undefined,
    },
    egressDnsFromProxy: p.SANDBOX_EGRESS_DNS === 'proxy' && Boolean(p.SANDBOX_EGRESS_PROXY_URL),
    concurrency: p.CONCURRENCY,
    resyncMs: p.RESYNC_SECONDS * 1000,
    requeueFloorMs: p.REQUEUE_FLOOR_MS,
    waitRequeueMs: p.WAIT_REQUEUE_SECONDS * 1000,
    workspaceBindTimeoutMs: p.WORKSPACE_BIND_TIMEOUT_SECONDS * 1000,
    pool: { agentPort: p.POOL_AGENT_PORT, bindTimeoutMs: p.POOL_BIND_TIMEOUT_MS },
    backoff: { baseMs: p.BACKOFF_BASE_MS, maxMs: p.BACKOFF_MAX_SECONDS * 1000, jitter: 0.2 },
    apiTimeoutMs: p.API_TIMEOUT_SECONDS * 1000,
    leaderElection: p.LEADER_ELECT ? leaderElection(p) : undefined,
    identity: p.POD_NAME || `${host}_${randomBytes(4).toString('hex')}`,
    http: httpPorts(p),
    tracing: tracingConfig(p),
    logLevel: p.LOG_LEVEL as LogLevel,
    shutdownTimeoutMs: p.SHUTDOWN_TIMEOUT_SECONDS * 1000,
    snapshots: snapshotConfig(p),
  };
}

function httpPorts(p: Parsed): OperatorConfig['http'] {
  if (p.HTTP_PORT !== 0 && p.HTTP_PORT === p.METRICS_PORT)
    throw new ConfigError('invalid configuration: METRICS_PORT must differ from HTTP_PORT');
  return { port: p.HTTP_PORT, metricsPort: p.METRICS_PORT, host: p.HTTP_HOST };
}

function watchNamespaces(p: Parsed): string[] {
  const list = p.WATCH_NAMESPACES ? p.WATCH_NAMESPACES.split(',') : [];
  const distinct = [...new Set(list)].sort();
  const problems: string[] = [];
  if (distinct.length !== list.length) problems.push('WATCH_NAMESPACES names a namespace twice');
  if (p.WATCH_NAMESPACE && list.length > 0 && (list.length !== 1 || list[0] !== p.WATCH_NAMESPACE)) {
    problems.push('WATCH_NAMESPACE and WATCH_NAMESPACES are both set and differ; set only WATCH_NAMESPACES');
  }
  if (problems.length > 0) throw new ConfigError(`invalid configuration: ${problems.join('; ')}`);
  return distinct.length > 0 ? distinct : p.WATCH_NAMESPACE ? [p.WATCH_NAMESPACE] : [];
}

function leaderElection(p: Parsed): NonNullable<OperatorConfig['leaderElection']> {
  const leaseNamespace = p.LEASE_NAMESPACE || p.POD_NAMESPACE;
  const problems: string[] = [];
  if (!leaseNamespace) problems.push('LEADER_ELECT needs LEASE_NAMESPACE or POD_NAMESPACE');
  if (p.LEASE_RENEW_DEADLINE_SECONDS >= p.LEASE_DURATION_SECONDS)
    problems.push('LEASE_RENEW_DEADLINE_SECONDS must be < LEASE_DURATION_SECONDS');
  if (p.LEASE_RETRY_PERIOD_SECONDS >= p.LEASE_RENEW_DEADLINE_SECONDS)
    problems.push('LEASE_RETRY_PERIOD_SECONDS must be < LEASE_RENEW_DEADLINE_SECONDS');
  if (problems.length > 0) throw new ConfigError(`invalid configuration: ${problems.join('; ')}`);
  return {
    leaseName: p.LEASE_NAME,
    leaseNamespace,
    leaseDurationMs: p.LEASE_DURATION_SECONDS * 1000,
    renewDeadlineMs: p.LEASE_RENEW_DEADLINE_SECONDS * 1000,
    retryPeriodMs: p.LEASE_RETRY_PERIOD_SECONDS * 1000,
  };
}
