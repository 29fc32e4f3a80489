/**
 * A session's audit trail (issue 30, docs/adr/0034): its records in order, and the verify call
 * that recomputes the hash chain over what the audit service stores. Read-only; the records are
 * written by the gateway's hooks (audit/plugin.ts) and the egress proxy.
 */
import type { FastifyInstance } from 'fastify';

import { ProblemError } from '../../errors.js';
import { resolveNamespace } from '../../service/namespaces.js';
import { auditRecordsSchema, auditVerifySchema } from './schemas.js';

type Route = {
  Params: { name: string };
  Querystring: { namespace?: string; afterSeq?: number; limit?: number };
};

export default function auditRoutes(app: FastifyInstance, _opts: unknown, done: (err?: Error) => void): void {
  const sink = (): NonNullable<FastifyInstance['audit']> => {
    if (!app.audit)
      throw new ProblemError('not-supported', 'the audit trail is off (GATEWAY_AUDIT_URL is empty)');
    return app.audit;
  };
  app.get<Route>('/v1/sessions/:name/audit', { schema: auditRecordsSchema }, async (request) => {
    const namespace = resolveNamespace(request.principal, request.query.namespace);
    return sink().records(namespace, request.params.name, {
      afterSeq: request.query.afterSeq ?? 0,
      limit: request.query.limit ?? 100,
    });
  });
  app.get<Route>('/v1/sessions/:name/audit/verify', { schema: auditVerifySchema }, async (request) => {
    const namespace = resolveNamespace(request.principal, request.query.namespace);
    return sink().verify(namespace, request.params.name);
  });
  done();
}
