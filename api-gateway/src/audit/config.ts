/**
 * Configuration of the audit trail and the egress rules API (issue 30, docs/adr/0034): where the
 * egress proxy's audit service listens. Spread into the gateway's schema by config.ts.
 * Chart: set from egressProxy.* (templates/gateway-deployment.yaml).
 */

/** The audit keys of the gateway's environment schema. */
export const auditEnvSchema = {
  /**
   * Base URL of the egress proxy's audit API (http://<release>-sandbox-platform-egress-proxy.<ns>:8091).
   * Empty (default): no audit records are sent, and GET /v1/sessions/{name}/audit answers 501.
   */
  GATEWAY_AUDIT_URL: { type: 'string', pattern: '^(https?://[^/\\s]+)?$', default: '' },
} as const;

/** The audit configuration; undefined while GATEWAY_AUDIT_URL is empty. */
export interface AuditConfig {
  url: string;
}

/** The audit configuration of validated keys. */
export function auditConfig(e: { GATEWAY_AUDIT_URL: string }): AuditConfig | undefined {
  return e.GATEWAY_AUDIT_URL === '' ? undefined : { url: e.GATEWAY_AUDIT_URL };
}
