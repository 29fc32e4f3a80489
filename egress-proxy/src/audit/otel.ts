/**
 * Exports every audit record as an OpenTelemetry log record (OTLP/HTTP, JSON, to
 * `<OTEL_EXPORTER_OTLP_ENDPOINT>/v1/logs`), batched. Loaded (import()) only when an endpoint is
 * configured. The log carries the whole record as attributes, chain fields included, so a
 * collector holds a copy of each session's chain outside the proxy: a record altered in the
 * store differs from its exported copy, and a rewritten chain from the exported hashes.
 */
import type { AuditRecord } from '@sandbox-platform/api';
import { SeverityNumber } from '@opentelemetry/api-logs';
import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchLogRecordProcessor, LoggerProvider } from '@opentelemetry/sdk-logs';

/** A started exporter: `emit` per record, `shutdown` flushes. */
export interface AuditLogExport {
  emit(record: AuditRecord): void;
  shutdown(): Promise<void>;
}

/** The OTLP attributes of a record (detail keys under `audit.detail.`). */
export function recordAttributes(r: AuditRecord): Record<string, string | number | boolean> {
  const attrs: Record<string, string | number | boolean> = {
    'sandbox.namespace': r.namespace,
    'sandbox.session': r.session,
    'audit.kind': r.kind,
    'audit.actor': r.actor,
    'audit.outcome': r.outcome,
    'audit.seq': r.seq,
    'audit.prev': r.prev,
    'audit.hash': r.hash,
  };
  for (const [k, v] of Object.entries(r.detail)) if (v !== null) attrs[`audit.detail.${k}`] = v;
  return attrs;
}

/** Starts the export to `endpoint` as `serviceName`. */
export function startAuditLogExport(endpoint: string, serviceName: string): AuditLogExport {
  const exporter = new OTLPLogExporter({ url: `${endpoint.replace(/\/$/, '')}/v1/logs` });
  const provider = new LoggerProvider({
    resource: resourceFromAttributes({ 'service.name': serviceName }),
    processors: [new BatchLogRecordProcessor({ exporter })],
  });
  const logger = provider.getLogger('sandbox.audit');
  return {
    emit(r) {
      logger.emit({
        timestamp: new Date(r.time),
        severityNumber: r.outcome === 'denied' ? SeverityNumber.WARN : SeverityNumber.INFO,
        severityText: r.outcome === 'denied' ? 'WARN' : 'INFO',
        body: `${r.kind} ${r.outcome} ${r.namespace}/${r.session}`,
        attributes: recordAttributes(r),
      });
    },
    shutdown: () => provider.shutdown(),
  };
}
