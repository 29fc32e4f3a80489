/**
 * The audit hooks of the gateway (issue 30): after every audited request (audit/events.ts) one
 * event goes to the audit service; a terminal is recorded when its upgrade is about to be
 * handled (a WebSocket never gets an ordinary response). Requests of no key or of a namespace
 * the key may not use are not recorded: one tenant never writes into another's trail. Also
 * decorates the app with the sink (`app.audit`) and the egress rule writer (`app.egressRules`)
 * for the audit and egress routes; without an audit sink, nothing is recorded.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

import { resolveNamespace } from '../service/namespaces.js';
import type { AuditSink } from './client.js';
import type { EgressRuleWriter } from './egress-writer.js';
import { auditEventOf } from './events.js';

/** Options: the sink and the rule writer (none: auditing off and the egress route 501). */
export interface AuditPluginOptions {
  audit?: AuditSink;
  egressRules?: EgressRuleWriter;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The audit trail's client; undefined when GATEWAY_AUDIT_URL is empty. */
    audit: AuditSink | undefined;
    /** Writes spec.egress; undefined in tests without one. */
    egressRules: EgressRuleWriter | undefined;
  }
}

const TERMINAL_ROUTE = '/v1/sessions/:name/pty';
/** Hijacked or upgraded: recorded before the handler, as requested (status 0 / 101). */
const BEFORE_HANDLER: ReadonlySet<string> = new Set([TERMINAL_ROUTE, '/mcp']);

/** JSON-RPC messages of an MCP body (a string: the route parses it itself); [] when not JSON. */
function mcpMessages(body: unknown): unknown[] {
  if (typeof body !== 'string') return [];
  try {
    const value = JSON.parse(body) as unknown;
    return Array.isArray(value) ? value : [value];
  } catch {
    return [];
  }
}

function namespaceOf(request: FastifyRequest, body: unknown): string | undefined {
  const query = request.query as { namespace?: string } | undefined;
  const args = (body as { params?: { arguments?: { namespace?: string } } } | undefined)?.params?.arguments;
  const requested = request.routeOptions.url === '/mcp' ? args?.namespace : query?.namespace;
  try {
    return resolveNamespace(request.principal, requested);
  } catch {
    return undefined;
  }
}

function record(sink: AuditSink, request: FastifyRequest, status: number): void {
  if (!request.principal || !request.routeOptions.url) return;
  if (request.routeOptions.url === '/mcp') {
    for (const message of mcpMessages(request.body)) recordOne(sink, request, { status, body: message });
  } else {
    recordOne(sink, request, { status, body: request.body });
  }
}

function recordOne(sink: AuditSink, request: FastifyRequest, r: { status: number; body: unknown }): void {
  const namespace = namespaceOf(request, r.body);
  if (!namespace) return;
  const { status, body } = r;
  const length = request.headers['content-length'];
  const event = auditEventOf({
    route: request.routeOptions.url ?? '',
    method: request.method,
    params: (request.params ?? {}) as Record<string, string | undefined>,
    body,
    status,
    namespace,
    actor: request.principal.keyId,
    time: new Date(),
    url: request.url,
    ...(length === undefined ? {} : { contentLength: Number(length) }),
  });
  if (event) sink.record(event);
}

export default fp<AuditPluginOptions>(
  (app: FastifyInstance, opts: AuditPluginOptions, done: (err?: Error) => void) => {
    app.decorate('audit', opts.audit);
    app.decorate('egressRules', opts.egressRules);
    const sink = opts.audit;
    if (sink) {
      app.addHook('preHandler', (request, _reply, next) => {
        const url = request.routeOptions.url;
        if (url === TERMINAL_ROUTE && request.ws) record(sink, request, 101);
        else if (url === '/mcp') record(sink, request, 0);
        next();
      });
      app.addHook('onResponse', (request, reply, next) => {
        if (!BEFORE_HANDLER.has(request.routeOptions.url ?? '')) record(sink, request, reply.statusCode);
        next();
      });
      const flush = (sink as { flush?: () => Promise<void> }).flush;
      if (flush) app.addHook('onClose', () => flush.call(sink));
    }
    done();
  },
  { name: 'audit', fastify: '5.x' },
);
