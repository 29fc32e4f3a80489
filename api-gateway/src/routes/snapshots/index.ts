/**
 * Snapshot and fork routes (docs/snapshots.md): POST/GET /v1/snapshots, GET/DELETE
 * /v1/snapshots/{name}, POST /v1/sessions/{name}/fork, over the snapshots service
 * (plugins/services.ts), which the MCP tools share. Without a snapshot API (tests built without
 * one) the service is absent and the routes answer 501 not-supported.
 */
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

import { ProblemError } from '../../errors.js';
import { resolveNamespace } from '../../service/namespaces.js';
import type { ForkInput, SnapshotInput, SnapshotsService } from '../../service/snapshots-service.js';
import {
  createSnapshotSchema,
  deleteSnapshotSchema,
  forkSchema,
  getSnapshotSchema,
  listSnapshotsSchema,
} from './schemas.js';

type NsQuery = { Querystring: { namespace?: string } };
type NameParams = { Params: { name: string } };

function service(app: FastifyInstance): SnapshotsService {
  if (!app.snapshots) throw new ProblemError('not-supported', 'snapshots are not served by this gateway');
  return app.snapshots;
}

export default fp(
  (app: FastifyInstance, _opts: unknown, done: (err?: Error) => void) => {
    app.post<NsQuery & { Body: SnapshotInput & { namespace?: string } }>(
      '/v1/snapshots',
      { schema: createSnapshotSchema },
      async (request, reply) => {
        const { namespace: bodyNs, ...input } = request.body;
        const namespace = resolveNamespace(request.principal, bodyNs ?? request.query.namespace);
        const view = await service(app).create(namespace, input);
        request.log.info(
          { keyId: request.principal.keyId, namespace, snapshot: view.name, session: input.session },
          'snapshot created',
        );
        return reply.status(202).send(view);
      },
    );

    app.get<NsQuery>('/v1/snapshots', { schema: listSnapshotsSchema }, async (request) => {
      const namespace = resolveNamespace(request.principal, request.query.namespace);
      return { items: await service(app).list(namespace) };
    });

    app.get<NsQuery & NameParams>('/v1/snapshots/:name', { schema: getSnapshotSchema }, async (request) => {
      const namespace = resolveNamespace(request.principal, request.query.namespace);
      return service(app).get(namespace, request.params.name);
    });

    app.delete<NsQuery & NameParams>(
      '/v1/snapshots/:name',
      { schema: deleteSnapshotSchema },
      async (request, reply) => {
        const namespace = resolveNamespace(request.principal, request.query.namespace);
        await service(app).delete(namespace, request.params.name);
        request.log.info(
          { keyId: request.principal.keyId, namespace, snapshot: request.params.name },
          'snapshot deleted',
        );
        return reply.status(204).send();
      },
    );

    app.post<NsQuery & NameParams & { Body: ForkInput }>(
      '/v1/sessions/:name/fork',
      { schema: forkSchema },
      async (request, reply) => {
        const namespace = resolveNamespace(request.principal, request.query.namespace);
        const result = await service(app).fork(
          request.principal,
          namespace,
          request.params.name,
          request.body,
        );
        request.log.info(
          {
            keyId: request.principal.keyId,
            namespace,
            session: request.params.name,
            snapshot: result.snapshot.name,
            forks: result.sessions.map((s) => s.name),
          },
          'session forked',
        );
        return reply.status(201).send(result);
      },
    );
    done();
  },
  { name: 'snapshots', fastify: '5.x', dependencies: ['services'] },
);
