/** Session routes: create-or-get, get, list, suspend, resume, delete. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

import { ProblemError } from '../../errors.js';
import { resolveNamespace } from '../../service/namespaces.js';
import { responseSignal } from '../request-signal.js';
import { traceOption } from '../../tracing/request-trace.js';
import type { CreateSessionInput } from '../../service/sessions-service.js';
import { createSchema, deleteSchema, getSchema, listSchema, resumeSchema, suspendSchema } from './schemas.js';

type NsQuery = { Querystring: { namespace?: string } };
type NameParams = { Params: { name: string } };
type CreateBody = CreateSessionInput & { namespace?: string };

export default function sessionRoutes(
  app: FastifyInstance,
  _opts: unknown,
  done: (err?: Error) => void,
): void {
  app.post<NsQuery & { Body: CreateBody }>(
    '/v1/sessions',
    { schema: createSchema },
    async (request, reply) => {
      const { namespace: bodyNs, ...input } = request.body;
      const queryNs = request.query.namespace;
      if (bodyNs !== undefined && queryNs !== undefined && bodyNs !== queryNs) {
        throw new ProblemError('invalid-request', 'namespace in the body and in the query differ');
      }
      const namespace = resolveNamespace(request.principal, bodyNs ?? queryNs);
      const { session, created } = await app.sessions.create(
        request.principal,
        namespace,
        input,
        request.traceContext,
      );
      request.log.info(
        { keyId: request.principal.keyId, namespace, session: session.name, created },
        created ? 'session created' : 'session exists',
      );
      return reply.status(created ? 201 : 200).send(session);
    },
  );

  app.get<NsQuery>('/v1/sessions', { schema: listSchema }, (request: FastifyRequest<NsQuery>) => {
    const namespace = resolveNamespace(request.principal, request.query.namespace);
    return { items: app.sessions.list(namespace) };
  });

  app.get<NsQuery & NameParams>('/v1/sessions/:name', { schema: getSchema }, async (request) => {
    const namespace = resolveNamespace(request.principal, request.query.namespace);
    return app.sessions.get(namespace, request.params.name, request.traceContext);
  });

  app.post<NsQuery & NameParams & { Body: Record<string, never> | undefined }>(
    '/v1/sessions/:name/suspend',
    { schema: suspendSchema },
    async (request) => {
      const namespace = resolveNamespace(request.principal, request.query.namespace);
      const view = await app.sessions.setSuspended(
        namespace,
        request.params.name,
        true,
        request.traceContext,
      );
      request.log.info(
        { keyId: request.principal.keyId, namespace, session: request.params.name },
        'session suspended',
      );
      return view;
    },
  );

  app.post<NsQuery & NameParams & { Body: { waitSeconds?: number } | undefined }>(
    '/v1/sessions/:name/resume',
    { schema: resumeSchema },
    async (request, reply) => {
      const namespace = resolveNamespace(request.principal, request.query.namespace);
      const { name } = request.params;
      let view = await app.sessions.setSuspended(namespace, name, false, request.traceContext);
      request.log.info({ keyId: request.principal.keyId, namespace, session: name }, 'session resumed');
      const waitSeconds = request.body?.waitSeconds ?? 0;
      if (waitSeconds > 0) {
        const { signal, dispose } = responseSignal(reply.raw);
        try {
          await app.execs.resolveTarget(namespace, name, waitSeconds, {
            signal,
            ...traceOption(request),
          });
        } finally {
          dispose();
        }
        view = await app.sessions.get(namespace, name, request.traceContext);
      }
      return view;
    },
  );

  app.delete<NsQuery & NameParams>(
    '/v1/sessions/:name',
    { schema: deleteSchema },
    async (request, reply: FastifyReply) => {
      const namespace = resolveNamespace(request.principal, request.query.namespace);
      await app.sessions.delete(namespace, request.params.name, request.traceContext);
      request.log.info(
        { keyId: request.principal.keyId, namespace, session: request.params.name },
        'session deleted',
      );
      return reply.status(204).send();
    },
  );
  done();
}
