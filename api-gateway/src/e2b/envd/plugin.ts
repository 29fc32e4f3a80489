/**
 * The envd API under E2B_ENVD_PREFIX (E2B_SANDBOX_URL = the gateway's URL + /e2b/envd): the
 * Process and Filesystem services over Connect (@connectrpc/connect-fastify; JSON and binary
 * protobuf, unary and streaming), and the /files and /health routes. The bridge (auth-bridge.ts)
 * has checked the access token before any of it runs; failures before a handler (no token, a
 * per-key limit, load shedding) are answered as Connect errors too.
 */
import { createContextValues } from '@connectrpc/connect';
import { fastifyConnectPlugin } from '@connectrpc/connect-fastify';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

import { toProblem } from '../../plugins/errors.js';
import { envdCallOf } from '../auth-bridge.js';
import { Filesystem } from '../gen/filesystem/filesystem_pb.js';
import { Process } from '../gen/process/process_pb.js';
import { connectErrorAnswer } from './errors.js';
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

/** Registers the envd API (register it with the envd prefix). */
export default async function envdPlugin(app: FastifyInstance, opts: EnvdPluginOptions): Promise<void> {
  await app.register(async (rpc: FastifyInstance) => {
    // Connect reads its own bodies: the plugin adds no-op parsers for its content types.
    rpc.removeAllContentTypeParsers();
    rpc.setErrorHandler((err: unknown, request: FastifyRequest, reply: FastifyReply) => {
      const problem = toProblem(err);
      if (problem.status >= 500)
        request.log.warn({ slug: problem.slug, detail: problem.detail }, 'e2b envd call failed');
      if (problem.retryAfterSeconds !== undefined)
        reply.header('retry-after', String(problem.retryAfterSeconds));
      const { status, body } = connectErrorAnswer(problem);
      return reply.status(status).type('application/json').send(body);
    });
    await rpc.register(fastifyConnectPlugin, {
      routes: (router) => {
        router.service(Process, opts.processes.impl());
        router.service(Filesystem, opts.filesystem.impl());
      },
      contextValues: (req) => createContextValues().set(ENVD_CALL, envdCallOf(req.raw)),
      readMaxBytes: opts.readMaxBytes,
      jsonOptions: { ignoreUnknownFields: true },
      grpc: false,
      grpcWeb: false,
    });
  });
  await app.register(envdHttpRoutes, { workspace: opts.workspace });
}
