/**
 * envd's plain HTTP routes: `/files` (download with GET, upload with POST as multipart/form-data
 * or application/octet-stream, optionally gzip-encoded) and `/health`. Files go through the
 * gateway's file service (the agent's workspace files, streamed both ways, bounded by
 * GATEWAY_MAX_FILE_BYTES); errors are envd's `{code, message}` (errors.ts).
 */
import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

import { ProblemError } from '../../errors.js';
import { toProblem } from '../../plugins/errors.js';
import { responseSignal } from '../../routes/request-signal.js';
import { envdCallOf } from '../auth-bridge.js';
import { envdHttpErrorAnswer } from './errors.js';
import { ByteLimit, fileParts, tooLarge } from './multipart.js';
import { workspaceEntry } from './paths.js';
import { checkUser } from './sandbox-calls.js';

type FilesRoute = { Querystring: { path?: string; username?: string } };

/** Files one multipart upload may carry. */
export const MAX_UPLOAD_FILES = 100;

/** The entry envd answers for a written file. */
interface WrittenEntry {
  name: string;
  type: 'file';
  path: string;
}

function queryString(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

function contentType(request: FastifyRequest): string {
  return (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
}

function requiredPath(path: string | undefined): string {
  if (path === undefined || path === '')
    throw new ProblemError('invalid-request', 'the path query parameter is required');
  return path;
}

/** The raw body of an octet-stream upload, gunzipped when it says so, bounded either way. */
function rawBody(request: FastifyRequest, limit: number): Readable {
  const body = request.body as Readable;
  const declared = Number(request.headers['content-length']);
  const gzip = (request.headers['content-encoding'] ?? '').toLowerCase() === 'gzip';
  if (!gzip && Number.isFinite(declared) && declared > limit) throw tooLarge(limit);
  const limited = new ByteLimit(limit);
  const source = gzip ? body.pipe(createGunzip()) : body;
  if (gzip) body.on('error', (err) => source.destroy(err));
  source.on('error', (err) =>
    limited.destroy(
      err instanceof ProblemError
        ? err
        : new ProblemError('invalid-request', `cannot read the upload: ${err.message}`),
    ),
  );
  return source.pipe(limited);
}

/** Options: the workspace's path in the sandbox (paths.ts). */
export interface EnvdHttpOptions {
  workspace: string;
}

/** Registers /files and /health (call inside an encapsulated context under the envd prefix). */
export default function envdHttpRoutes(
  app: FastifyInstance,
  opts: EnvdHttpOptions,
  done: (err?: Error) => void,
): void {
  // Bodies stay streams, whatever their type (multipart is parsed here, as it arrives).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_req, payload, next) => next(null, payload));
  app.setErrorHandler((err: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const problem = toProblem(err);
    if (problem.status >= 500)
      request.log.warn({ slug: problem.slug, detail: problem.detail }, 'e2b envd call failed');
    const { status, body } = envdHttpErrorAnswer(problem);
    return reply.status(status).type('application/json').send(body);
  });

  const write = async (reply: FastifyReply, path: string, stream: Readable): Promise<WrittenEntry> => {
    const call = envdCallOf(reply.request.raw);
    const target = workspaceEntry(path, opts.workspace);
    const { signal, dispose } = responseSignal(reply.raw);
    try {
      const file = { path: target.relative, data: { stream, size: undefined } };
      await app.execs.writeFile(call.sandbox.namespace, call.sandbox.name, file, { signal });
    } finally {
      dispose();
    }
    return {
      name: target.absolute.slice(target.absolute.lastIndexOf('/') + 1),
      type: 'file',
      path: target.absolute,
    };
  };

  app.get<FilesRoute>('/files', async (request, reply) => {
    const call = envdCallOf(request.raw);
    checkUser(queryString(request.query.username) ?? call.user);
    const target = workspaceEntry(requiredPath(queryString(request.query.path)), opts.workspace);
    const file = await app.execs.readFile(call.sandbox.namespace, call.sandbox.name, target.relative, {
      meter: app.cpuMeters.forKey(call.principal.keyId),
    });
    reply.type('application/octet-stream');
    if (file.size !== undefined) reply.header('content-length', String(file.size));
    return reply.send(file.body);
  });

  app.post<FilesRoute>('/files', async (request, reply) => {
    const call = envdCallOf(request.raw);
    checkUser(queryString(request.query.username) ?? call.user);
    const path = queryString(request.query.path);
    const type = contentType(request);
    if (type === 'application/octet-stream') {
      return [await write(reply, requiredPath(path), rawBody(request, app.config.maxFileBytes))];
    }
    if (type !== 'multipart/form-data') {
      throw new ProblemError('invalid-request', 'upload as multipart/form-data or application/octet-stream');
    }
    const written: WrittenEntry[] = [];
    const limits = { maxFileBytes: app.config.maxFileBytes, maxFiles: MAX_UPLOAD_FILES };
    for await (const part of fileParts(request.body as Readable, request.headers, limits)) {
      written.push(await write(reply, requiredPath(part.filename || path), part.stream));
    }
    if (written.length === 0) throw new ProblemError('invalid-request', 'the upload holds no file');
    return written;
  });

  app.get('/health', async (request, reply) => {
    const { sandbox } = envdCallOf(request.raw);
    const view = await app.sessions.get(sandbox.namespace, sandbox.name);
    if (view.ready) return reply.status(204).send();
    const status = view.suspended ? 502 : 503;
    return reply
      .status(status)
      .type('application/json')
      .send({ code: status, message: `sandbox is not running: ${view.reason}` });
  });
  done();
}
