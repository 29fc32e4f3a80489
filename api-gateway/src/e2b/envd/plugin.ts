/**
 * The envd API under E2B_ENVD_PREFIX (E2B_SANDBOX_URL = the gateway's URL + /e2b/envd): the
 * Process and Filesystem services over the Connect protocol (JSON and binary protobuf, unary and
 * streaming), and the /files and /health routes. The bridge (auth-bridge.ts) has checked the
 * access token before any of it runs; failures before a handler (no token, a per-key limit, load
 * shedding) are answered as Connect errors too.
 *
 * The routes are @connectrpc/connect's router handlers mounted on fastify the way its fastify
 * adapter mounts them, with one difference: a response that cannot be written because the caller
 * went away (it stopped a watch, dropped a command handle) is logged at debug through the
 * gateway's logger, where the adapter writes it to the console as a handler failure.
 */
import { createConnectRouter, createContextValues, type ConnectRouter } from '@connectrpc/connect';
import { universalRequestFromNodeRequest, universalResponseToNodeResponse } from '@connectrpc/connect-node';
import * as protoConnect from '@connectrpc/connect/protocol-connect';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

import { ProblemError } from '../../errors.js';
import { toProblem } from '../../plugins/errors.js';
import { envdCallOf } from '../auth-bridge.js';
import { Filesystem } from '../gen/filesystem/filesystem_pb.js';
import { Process } from '../gen/process/process_pb.js';
import { connectErrorAnswer, connectStreamErrorAnswer } from './errors.js';
import type { EnvdFilesystem } from './filesystem-service.js';
import envdHttpRoutes from './http-routes.js';
import type { EnvdProcesses } from './process-service.js';
import { ENVD_CALL } from './sandbox-calls.js';

/** Options of the envd plugin. */
export interface EnvdPluginOptions {
  processes: EnvdProcesses;
  filesystem: EnvdFilesystem;
  /** Largest RPC message read (GATEWAY_MAX_BODY_BYTES). */
  readMaxBytes: number;
  /** The workspace's path in the sandbox (paths.ts). */
  workspace: string;
}

/** Content types of Connect streaming requests. */
const STREAM_TYPE = /^application\/connect\+(json|proto)\b/i;

function rpcErrorHandler(err: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const problem = toProblem(err);
  if (problem.status >= 500)
    request.log.warn({ slug: problem.slug, detail: problem.detail }, 'e2b envd call failed');
  if (problem.retryAfterSeconds !== undefined) reply.header('retry-after', String(problem.retryAfterSeconds));
  const streaming = STREAM_TYPE.exec(request.headers['content-type'] ?? '');
  if (streaming) {
    const type = `application/connect+${streaming[1]!.toLowerCase()}`;
    return reply.status(200).type(type).send(connectStreamErrorAnswer(problem));
  }
  const { status, body } = connectErrorAnswer(problem);
  return reply.status(status).type('application/json').send(body);
}

/**
 * A request body over the limit is refused before Connect reads it, as InvalidArgument (the SDKs'
 * InvalidArgumentError). Connect's own readMaxBytes (the same limit) still bounds bodies sent
 * without a length, but answers ResourceExhausted, which the SDKs report as a rate limit.
 */
function checkLength(request: FastifyRequest, limit: number): void {
  const declared = Number(request.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    throw new ProblemError('invalid-request', `the request is ${declared} bytes; the limit is ${limit}`);
  }
}

function mountRouter(rpc: FastifyInstance, router: ConnectRouter, readMaxBytes: number): void {
  // Connect reads its own bodies (bounded by readMaxBytes): no fastify parsing for its types.
  rpc.removeAllContentTypeParsers();
  rpc.addContentTypeParser(protoConnect.contentTypeRegExp, (_req, _payload, done) => done(null, undefined));
  rpc.setErrorHandler(rpcErrorHandler);
  for (const handler of router.handlers) {
    rpc.all(handler.requestPath, async (request, reply) => {
      checkLength(request, readMaxBytes);
      const values = createContextValues().set(ENVD_CALL, envdCallOf(request.raw));
      const answer = await handler(
        universalRequestFromNodeRequest(request.raw, reply.raw, undefined, values),
      );
      // Headers set on the reply by hooks (e.g. a trace id) go out with the raw answer.
      for (const [key, value] of Object.entries(reply.getHeaders())) {
        if (value !== undefined) reply.raw.setHeader(key, value);
      }
      try {
        await universalResponseToNodeResponse(answer, reply.raw);
      } catch (err) {
        request.log.debug(
          { rpc: handler.requestPath, err: (err as Error).message },
          'e2b envd answer cut short',
        );
      }
    });
  }
}

/** Registers the envd API (register it with the envd prefix). */
export default async function envdPlugin(app: FastifyInstance, opts: EnvdPluginOptions): Promise<void> {
  const router = createConnectRouter({
    readMaxBytes: opts.readMaxBytes,
    jsonOptions: { ignoreUnknownFields: true },
    grpc: false,
    grpcWeb: false,
  });
  router.service(Process, opts.processes.impl());
  router.service(Filesystem, opts.filesystem.impl());
  await app.register((rpc: FastifyInstance, _o: unknown, done: (err?: Error) => void) => {
    mountRouter(rpc, router, opts.readMaxBytes);
    done();
  });
  await app.register(envdHttpRoutes, { workspace: opts.workspace });
}
