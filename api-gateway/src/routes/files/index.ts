/**
 * File routes: upload and download passthrough to the session, bounded by the gateway's file size
 * limit. Uploads are never held whole: the request body stays a stream that is copied to the
 * sandbox with backpressure once the agent's connection is up (a connect failure is still retried:
 * nothing was read from the client yet), so a client or agent that stalls holds socket buffers,
 * not the file. Downloads stream through.
 */
import { Transform, type Readable, type TransformCallback } from 'node:stream';

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

import { ProblemError } from '../../errors.js';
import type { UploadBody } from '../../exec/types.js';
import { resolveNamespace } from '../../service/namespaces.js';
import { responseSignal } from '../request-signal.js';
import { traceOption } from '../../tracing/request-trace.js';
import { checkWorkspacePath } from './path.js';
import { getFileSchema, putFileSchema } from './schemas.js';

type FileRoute = { Params: { name: string; '*': string }; Querystring: { namespace?: string } };

/** Fails with payload-too-large once more than `limit` bytes went through (bodies without a length). */
class UploadLimit extends Transform {
  private size = 0;
  constructor(private readonly limit: number) {
    super();
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.size += chunk.length;
    if (this.size > this.limit) cb(tooLarge(this.limit));
    else cb(null, chunk);
  }
}

function tooLarge(limit: number, size?: number): ProblemError {
  return new ProblemError(
    'payload-too-large',
    size === undefined
      ? `the file exceeds the limit of ${limit} bytes`
      : `the file is ${size} bytes; the limit is ${limit}`,
  );
}

/** The upload of a request: its declared length is checked before a byte is read. */
function uploadOf(request: FastifyRequest, limit: number): UploadBody {
  const body = request.body as Readable | undefined;
  const declared = request.headers['content-length'];
  const size = declared === undefined ? undefined : Number(declared);
  if (size !== undefined && size > limit) throw tooLarge(limit, size);
  if (!body || size === 0) return Buffer.alloc(0);
  if (size !== undefined) return { stream: body, size }; // node:http delivers exactly `size` bytes
  const limited = new UploadLimit(limit);
  body.on('error', (err) => limited.destroy(err));
  return { stream: body.pipe(limited), size: undefined };
}

export default function fileRoutes(app: FastifyInstance, _opts: unknown, done: (err?: Error) => void): void {
  // This plugin is encapsulated: the body of the file routes is the raw request stream, whatever
  // content type the client sends (a .json file uploaded as application/json stays bytes).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_req, payload, next) => next(null, payload));

  app.put<FileRoute>(
    '/v1/sessions/:name/files/*',
    { schema: putFileSchema },
    async (request, reply: FastifyReply) => {
      const namespace = resolveNamespace(request.principal, request.query.namespace);
      const path = checkWorkspacePath(request.params['*']);
      const data = uploadOf(request, app.config.maxFileBytes);
      const { signal, dispose } = responseSignal(reply.raw);
      try {
        const result = await app.execs.writeFile(
          namespace,
          request.params.name,
          { path, data },
          {
            signal,
            ...traceOption(request),
          },
        );
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
      const meter = app.cpuMeters.forKey(request.principal.keyId);
      const file = await app.execs.readFile(namespace, request.params.name, path, {
        meter,
        ...traceOption(request),
      });
      reply.type('application/octet-stream');
      if (file.size !== undefined) reply.header('content-length', String(file.size));
      return reply.send(file.body);
    },
  );
  done();
}
