/**
 * Which gateway requests are audited, and the record each makes. Pure: a request's route, method,
 * parameters, body and status in; an audit event (or none) out. One record per exec (also code
 * runs), file write, background process start, terminal open and port-route request, through REST
 * or through the MCP tools that do the same. What a record keeps: the command or path as sent
 * (cut at AUDIT_DETAIL_MAX_CHARS by the service), never stdin, file contents or headers.
 */
import { AUDIT_KINDS, type AuditEvent, type AuditKind } from '@sandbox-platform/api';

/** What the hook knows of a finished (or upgrading) request. */
export interface AuditedRequest {
  /** The route pattern (fastify's routeOptions.url). */
  route: string;
  method: string;
  params: Record<string, string | undefined>;
  body: unknown;
  status: number;
  namespace: string;
  actor: string;
  time: Date;
  /** Request body length, when declared. */
  contentLength?: number;
  /** The raw URL (for the port route's path). */
  url: string;
}

type Detail = AuditEvent['detail'];
type Rule = { kind: AuditKind; method: string; detail: (r: AuditedRequest) => Detail };

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const field = (body: unknown, key: string): unknown =>
  typeof body === 'object' && body !== null ? (body as Record<string, unknown>)[key] : undefined;
const S = '/v1/sessions/:name';

/** REST routes and the record each makes. */
const ROUTES: Record<string, Rule> = {
  [`${S}/exec`]: {
    kind: AUDIT_KINDS.exec,
    method: 'POST',
    detail: (r) => ({ command: str(field(r.body, 'command')) }),
  },
  [`${S}/exec/stream`]: {
    kind: AUDIT_KINDS.exec,
    method: 'POST',
    detail: (r) => ({ command: str(field(r.body, 'command')), streamed: true }),
  },
  [`${S}/code`]: {
    kind: AUDIT_KINDS.exec,
    method: 'POST',
    detail: (r) => ({ code: str(field(r.body, 'code')) }),
  },
  [`${S}/code/stream`]: {
    kind: AUDIT_KINDS.exec,
    method: 'POST',
    detail: (r) => ({ code: str(field(r.body, 'code')), streamed: true }),
  },
  [`${S}/files/*`]: {
    kind: AUDIT_KINDS.fileWrite,
    method: 'PUT',
    detail: (r) => ({ path: r.params['*'] ?? null, bytes: r.contentLength ?? null }),
  },
  [`${S}/processes`]: {
    kind: AUDIT_KINDS.processStart,
    method: 'POST',
    detail: (r) => ({ command: str(field(r.body, 'command')) }),
  },
  [`${S}/pty`]: { kind: AUDIT_KINDS.terminalOpen, method: 'GET', detail: () => ({}) },
};

const PORT_ROUTES = new Set([`${S}/ports/:port`, `${S}/ports/:port/*`]);

/** MCP tools doing what an audited route does: the record kind and the argument it keeps. */
const MCP_TOOLS: Record<string, { kind: AuditKind; keep: string }> = {
  exec: { kind: AUDIT_KINDS.exec, keep: 'command' },
  run_code: { kind: AUDIT_KINDS.exec, keep: 'code' },
  write_file: { kind: AUDIT_KINDS.fileWrite, keep: 'path' },
  start_process: { kind: AUDIT_KINDS.processStart, keep: 'command' },
};

/** ok / denied / error from the HTTP status; `requested` before an answer exists (0, 101). */
const outcome = (status: number): string =>
  status === 0 || status === 101 ? 'requested' : status < 400 ? 'ok' : status === 403 ? 'denied' : 'error';

/** The audit event of a request, or undefined when it is not audited. */
export function auditEventOf(r: AuditedRequest): AuditEvent | undefined {
  const base = {
    time: r.time.toISOString(),
    namespace: r.namespace,
    actor: r.actor,
    outcome: outcome(r.status),
  };
  const session = r.params.name;
  if (r.route === '/mcp') return mcpEvent(r, base);
  if (!session) return undefined;
  if (PORT_ROUTES.has(r.route)) {
    const path = r.url.replace(/^[^?]*?\/ports\/\d+/, '').split('?')[0] || '/';
    return {
      ...base,
      session,
      kind: AUDIT_KINDS.portRequest,
      detail: { port: Number(r.params.port), method: r.method, path, status: r.status },
    };
  }
  const rule = ROUTES[r.route];
  if (!rule || rule.method !== r.method) return undefined;
  return { ...base, session, kind: rule.kind, detail: { ...rule.detail(r), status: r.status } };
}

function mcpEvent(
  r: AuditedRequest,
  base: Pick<AuditEvent, 'time' | 'namespace' | 'actor' | 'outcome'>,
): AuditEvent | undefined {
  if (field(r.body, 'method') !== 'tools/call') return undefined;
  const params = field(r.body, 'params');
  const tool = MCP_TOOLS[String(field(params, 'name'))];
  const args = field(params, 'arguments');
  const session = str(field(args, 'session'));
  if (!tool || !session) return undefined;
  return {
    ...base,
    session,
    kind: tool.kind,
    detail: { via: 'mcp', [tool.keep]: str(field(args, tool.keep)), status: r.status },
  };
}
