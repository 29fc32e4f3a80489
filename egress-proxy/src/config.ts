/**
 * The egress proxy's configuration, from the environment (read only by main.ts). Every key is
 * mapped 1:1 from the chart's egressProxy values (templates/egress-proxy-deployment.yaml).
 */
import { int, logLevel, required } from './env.js';
import type { EgressRule } from './rules.js';

/** Validated configuration. */
export interface EgressConfig {
  /** EGRESS_PROXY_PORT (3128): the HTTP proxy sandboxes use as HTTP_PROXY/HTTPS_PROXY. */
  proxyPort: number;
  /** EGRESS_AUDIT_PORT (8091): the audit API, for gateway pods only (NetworkPolicy). */
  auditPort: number;
  /**
   * EGRESS_DNS_PORT (5353; 0: off): the sandboxes' DNS, UDP and TCP (src/dns/; the Service maps
   * port 53 to it and the operator makes it sandbox Pods' only name server).
   */
  dnsPort: number;
  /** EGRESS_DNS_SELF_NAMES: the proxy's own names, always answered (its Service address), comma-separated. */
  dnsSelfNames: string[];
  /** EGRESS_DNS_TTL_SECONDS (30): TTL of DNS answers, and how long the proxy caches one. */
  dnsTtlSeconds: number;
  /**
   * EGRESS_DROPS_TOKEN_SECRET (unset): the Secret of the platform namespace the proxy writes the
   * drop reporters' token to (kube/drops-token.ts); unset: no reporters (the chart sets it with
   * egressProxy.dropAudit.enabled).
   */
  dropsTokenSecret?: string;
  /** EGRESS_HEALTH_PORT (9090): /healthz and /readyz for the kubelet. */
  healthPort: number;
  /** EGRESS_NAMESPACES (required): the sandbox namespaces, comma-separated. */
  namespaces: string[];
  /** EGRESS_PLATFORM_NAMESPACE (required): where the CA Secrets live (the release namespace). */
  platformNamespace: string;
  /** EGRESS_CA_SECRET_PREFIX (sandbox-egress-ca): CA Secret name is `<prefix>-<namespace>`. */
  caSecretPrefix: string;
  /** EGRESS_DEFAULTS ({}): JSON {"<namespace>" | "*": [rules]}, the namespace defaults. */
  defaults: Record<string, EgressRule[]>;
  /** EGRESS_BLOCKED_CIDRS: addresses never dialed, whatever the rules (comma-separated CIDRs). */
  blockedCidrs: string[];
  /** EGRESS_UPSTREAM_CA_FILE (unset): PEM file of extra CAs trusted for upstream TLS (besides Node's). */
  upstreamCaFile?: string;
  /** EGRESS_UPSTREAM_TIMEOUT_MS (30000): upstream response-header and idle timeout. */
  upstreamTimeoutMs: number;
  /** EGRESS_MAX_TUNNELS_PER_SESSION (256): open CONNECT tunnels per session. */
  maxTunnelsPerSession: number;
  /** EGRESS_AUDIT_DIR (/var/lib/sandbox-audit): the audit store's directory (a volume). */
  auditDir: string;
  /** EGRESS_AUDIT_RETENTION_SECONDS (2592000 = 30 days): records older are dropped. */
  auditRetentionSeconds: number;
  /** EGRESS_AUDIT_MAX_RECORDS (100000): records kept per session; the oldest beyond are dropped. */
  auditMaxRecords: number;
  /** SANDBOX_MASTER_KEY_FILE (required): the master key (audit chain key and client token derive from it). */
  masterKeyFile: string;
  /** OTEL_EXPORTER_OTLP_ENDPOINT (unset): export audit records as OpenTelemetry logs to <endpoint>/v1/logs. */
  otlpEndpoint?: string;
  /** OTEL_SERVICE_NAME (sandbox-egress-proxy). */
  serviceName: string;
  /** LOG_LEVEL (info): error, warn, info or debug. */
  logLevel: 'error' | 'warn' | 'info' | 'debug';
}

const DEFAULT_BLOCKED = '169.254.0.0/16,127.0.0.0/8,0.0.0.0/8,::1/128,fe80::/10';

const list = (v: string): string[] =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

function defaults(raw: string | undefined): Record<string, EgressRule[]> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw || '{}');
  } catch {
    throw new Error('EGRESS_DEFAULTS is not JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new Error('EGRESS_DEFAULTS must be an object of namespace -> rules');
  }
  for (const [ns, rules] of Object.entries(parsed)) {
    if (!Array.isArray(rules) || rules.some((r) => typeof (r as EgressRule)?.host !== 'string')) {
      throw new Error(`EGRESS_DEFAULTS[${ns}] must be a list of rules with a host`);
    }
  }
  return parsed as Record<string, EgressRule[]>;
}

/** Reads and validates the configuration; throws naming the key at fault. */
export function loadConfig(env: NodeJS.ProcessEnv): EgressConfig {
  const namespaces = list(required(env, 'EGRESS_NAMESPACES'));
  return {
    proxyPort: int(env, 'EGRESS_PROXY_PORT', [3128, 1, 65535]),
    auditPort: int(env, 'EGRESS_AUDIT_PORT', [8091, 1, 65535]),
    healthPort: int(env, 'EGRESS_HEALTH_PORT', [9090, 1, 65535]),
    dropsTokenSecret: env.EGRESS_DROPS_TOKEN_SECRET || undefined,
    dnsPort: int(env, 'EGRESS_DNS_PORT', [5353, 0, 65535]),
    dnsSelfNames: list(env.EGRESS_DNS_SELF_NAMES ?? ''),
    dnsTtlSeconds: int(env, 'EGRESS_DNS_TTL_SECONDS', [30, 0, 3600]),
    namespaces,
    platformNamespace: required(env, 'EGRESS_PLATFORM_NAMESPACE'),
    caSecretPrefix: env.EGRESS_CA_SECRET_PREFIX || 'sandbox-egress-ca',
    defaults: defaults(env.EGRESS_DEFAULTS),
    blockedCidrs: list(env.EGRESS_BLOCKED_CIDRS ?? DEFAULT_BLOCKED),
    upstreamCaFile: env.EGRESS_UPSTREAM_CA_FILE || undefined,
    upstreamTimeoutMs: int(env, 'EGRESS_UPSTREAM_TIMEOUT_MS', [30_000, 100, 600_000]),
    maxTunnelsPerSession: int(env, 'EGRESS_MAX_TUNNELS_PER_SESSION', [256, 1, 65_536]),
    auditDir: env.EGRESS_AUDIT_DIR || '/var/lib/sandbox-audit',
    auditRetentionSeconds: int(env, 'EGRESS_AUDIT_RETENTION_SECONDS', [2_592_000, 60, 10 * 365 * 86400]),
    auditMaxRecords: int(env, 'EGRESS_AUDIT_MAX_RECORDS', [100_000, 10, 10_000_000]),
    masterKeyFile: required(env, 'SANDBOX_MASTER_KEY_FILE'),
    otlpEndpoint: env.OTEL_EXPORTER_OTLP_ENDPOINT || undefined,
    serviceName: env.OTEL_SERVICE_NAME || 'sandbox-egress-proxy',
    logLevel: logLevel(env),
  };
}
