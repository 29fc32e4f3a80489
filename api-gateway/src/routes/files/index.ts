/**
 * File routes: upload and download passthrough to the session, bounded by the gateway's file size
 * limit. Uploads are read whole (bounded) before forwarding so a connect failure can be retried
 * without asking the client to resend; downloads stream through.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

import { resolveNamespace } from '../../service/namespaces.js';
import { responseSignal } from '../request-signal.js';
import { checkWorkspacePath } from './path.js';
import { getFileSchema, putFileSchema } from './schemas.js';

type FileRoute = { Params: { name: string; '*': string }; Querystring: { namespace?: string } };

export default function fileRoutes(app: FastifyInstance, _opts: unknown, done: (err?: Error) => void): void {
  // This plugin is encapsulated: the raw-bytes parser applies to the file routes only, whatever
  // content type the client sends (a .json file uploaded as application/json stays bytes).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    '*',
    { parseAs: 'buffer', bodyLimit: app.config.maxFileBytes },
    (_req, body, next) => next(null, body),
  );

  app.put<FileRoute & { Body: Buffer }>(
    '/v1/sessions/:name/files/*',
    { schema: putFileSchema, bodyLimit: app.config.maxFileBytes },
    async (request, reply: FastifyReply) => {
      const namespace = resolveNamespace(request.principal, request.query.namespace);
      const path = checkWorkspacePath(request.params['*']);
      const data = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
      const { signal, dispose } = responseSignal(reply.raw);
      try {
        const result = await app.execs.writeFile(namespace, request.params.name, { path, data }, signal);
        return reply.status(201).send(result);
      } finally {
        dispose();
      }
    },
  );

  app.get<FileRoute>(
    '/v1/sessions/:name/files/*',
    { schema: getFileSchema },
    async (request: FastifyRequest<FileRoute>, reply) => {
      const namespace = resolveNamespace(request.principal, request.query.namespace);
      const path = checkWorkspacePath(request.params['*']);
      const file = await app.execs.readFile(namespace, request.params.name, path);
      reply.type('application/octet-stream');
      if (file.size !== undefined) reply.header('content-length', String(file.size));
      return reply.send(file.body);
    },
  );
  done();
}
