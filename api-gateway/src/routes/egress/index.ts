/**
 * Egress rules of a session (issue 30, docs/adr/0034): read them, and replace them while the
 * session runs. The write goes to the API server (spec.egress), where the CRD and the sandbox
 * policy judge it; the egress proxy watches sessions and applies the change within a second,
 * closing open tunnels the new rules no longer allow. Each change is audited.
 */
import { AUDIT_KINDS, type SandboxSession } from '@sandbox-platform/api';
import type { FastifyInstance } from 'fastify';

import type { EgressSpec } from '../../audit/egress-writer.js';
import { ProblemError } from '../../errors.js';
import { resolveNamespace } from '../../service/namespaces.js';
import { getEgressSchema, putEgressSchema } from './schemas.js';

type Route = { Params: { name: string }; Querystring: { namespace?: string } };

const view = (s: SandboxSession): { name: string; namespace: string; egress: EgressSpec } => ({
  name: s.metadata.name ?? '',
  namespace: s.metadata.namespace ?? '',
  egress: s.spec.egress ?? {},
});

export default function egressRoutes(
  app: FastifyInstance,
  _opts: unknown,
  done: (err?: Error) => void,
): void {
  app.get<Route>('/v1/sessions/:name/egress', { schema: getEgressSchema }, async (request) => {
    const namespace = resolveNamespace(request.principal, request.query.namespace);
    const session =
      app.store.get(namespace, request.params.name) ??
      (await app.store.readFresh(namespace, request.params.name));
    if (!session) throw new ProblemError('session-not-found', `session ${request.params.name} not found`);
    return view(session);
  });

  app.put<Route & { Body: EgressSpec }>(
    '/v1/sessions/:name/egress',
    { schema: putEgressSchema },
    async (request) => {
      const writer = app.egressRules;
      if (!writer) throw new ProblemError('not-supported', 'this gateway has no egress rule writer');
      const namespace = resolveNamespace(request.principal, request.query.namespace);
      const updated = await writer.replace(namespace, request.params.name, request.body);
      if (!updated) throw new ProblemError('session-not-found', `session ${request.params.name} not found`);
      app.audit?.record({
        time: new Date().toISOString(),
        namespace,
        session: request.params.name,
        kind: AUDIT_KINDS.egressRules,
        actor: request.principal.keyId,
        outcome: 'ok',
        detail: {
          rules: (request.body.rules ?? []).length,
          hosts: (request.body.rules ?? []).map((r) => r.host).join(','),
          inheritNamespaceDefaults: request.body.inheritNamespaceDefaults ?? true,
        },
      });
      return view(updated);
    },
  );
  done();
}
