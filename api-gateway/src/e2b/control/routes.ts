/**
 * The E2B control API (E2B_API_URL = the gateway's URL + /e2b): what the official SDKs call to
 * create, list, inspect, time, pause, connect and kill sandboxes. Authenticated by the gateway's
 * own hooks (the bridge turns `X-API-Key` into the bearer key), so per-key limits and tenancy are
 * the REST API's. Errors are E2B's `{code, message}` JSON with the statuses its SDKs map
 * (401 AuthenticationError, 429 RateLimitError, 404 NotFound/SandboxNotFound, other 4xx/5xx
 * SandboxError). A key with several namespaces creates in its default one, or in the one the
 * `X-Sandbox-Namespace` header names (the SDKs' `apiHeaders` option).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

import { ProblemError } from '../../errors.js';
import { toProblem } from '../../plugins/errors.js';
import { responseSignal } from '../../routes/request-signal.js';
import { resolveNamespace } from '../../service/namespaces.js';
import type { ListQuery } from './listing.js';
import { DEFAULT_TIMEOUT_SECONDS, type E2bSandboxes, type NewSandbox } from './sandboxes.js';
import { connectSchema, createSchema, idParams, listSchema, pauseSchema, timeoutSchema } from './schemas.js';

/** Options: the sandbox operations. */
export interface ControlRoutesOptions {
  sandboxes: E2bSandboxes;
}

type IdRoute = { Params: { sandboxID: string } };
type CreateRoute = { Body: NewSandbox & Record<string, unknown> };

/** The v2 API's default timeout (its OpenAPI document); v1's is sandboxes.ts DEFAULT_TIMEOUT_SECONDS. */
export const V2_DEFAULT_TIMEOUT_SECONDS = 300;

/** E2B's status for a problem (what its SDKs expect for the same situation). */
export function e2bStatus(problem: ProblemError): number {
  if (problem.slug === 'policy-violation') return 400;
  if (problem.slug === 'quota-exceeded') return 429;
  if (problem.slug === 'session-gone') return 404;
  return problem.status;
}

/** The unsupported parts of NewSandbox, refused rather than ignored. */
function refuseUnsupported(body: Record<string, unknown>): void {
  const refuse = (what: string): never => {
    throw new ProblemError('invalid-request', `${what} is not supported by this gateway (docs/e2b.md)`);
  };
  if (body.allow_internet_access === false)
    refuse('allow_internet_access: false (egress is the platform network policy)');
  if (body.network !== undefined && body.network !== null) refuse('network configuration');
  if (body.mcp !== undefined && body.mcp !== null) refuse('mcp');
  if (body.iam !== undefined && body.iam !== null) refuse('iam');
  if (Array.isArray(body.volumeMounts) && body.volumeMounts.length > 0) refuse('volumeMounts');
  const autoResume = body.autoResume as { enabled?: unknown } | undefined;
  if (autoResume?.enabled === false)
    refuse('autoResume disabled (sandboxes always resume on their next call)');
}

function unsupported(what: string): () => Promise<never> {
  return () =>
    Promise.reject(
      new ProblemError('not-supported', `${what} is not supported by this gateway (docs/e2b.md)`),
    );
}

/** Registers the control API (inside the /e2b prefix). */
export default function controlRoutes(
  app: FastifyInstance,
  opts: ControlRoutesOptions,
  done: (err?: Error) => void,
): void {
  const sb = opts.sandboxes;
  app.setErrorHandler((err: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const problem = toProblem(err);
    if (problem.status >= 500)
      request.log.warn({ slug: problem.slug, detail: problem.detail }, 'e2b control call failed');
    if (problem.retryAfterSeconds !== undefined)
      reply.header('retry-after', String(problem.retryAfterSeconds));
    const status = e2bStatus(problem);
    const message = problem.slug === 'internal' ? 'internal error' : problem.message;
    return reply.status(status).type('application/json').send({ code: status, message });
  });
  app.setNotFoundHandler((request, reply) =>
    reply
      .status(404)
      .type('application/json')
      .send({ code: 404, message: `no route ${request.method} ${request.url.split('?')[0]}` }),
  );

  app.get('/health', { config: { public: true } }, () => ({ status: 'ok' }));

  // v1 (E2B's default timeout 15 s) and v2 (300 s; what the pinned SDKs call).
  const create =
    (defaultTimeout: number) =>
    async (request: FastifyRequest<CreateRoute>, reply: FastifyReply): Promise<FastifyReply> => {
      refuseUnsupported(request.body);
      const ns = request.headers['x-sandbox-namespace'];
      const namespace = resolveNamespace(request.principal, typeof ns === 'string' ? ns : undefined);
      const { signal, dispose } = responseSignal(reply.raw);
      try {
        const body = { ...request.body, timeout: request.body.timeout ?? defaultTimeout };
        const answer = await sb.create(request.principal, namespace, body, signal);
        request.log.info(
          { keyId: request.principal.keyId, namespace, sandbox: answer.sandboxID },
          'e2b sandbox created',
        );
        return await reply.status(201).send(answer);
      } finally {
        dispose();
      }
    };
  app.post<CreateRoute>('/sandboxes', { schema: createSchema }, create(DEFAULT_TIMEOUT_SECONDS));
  app.post<CreateRoute>('/v2/sandboxes', { schema: createSchema }, create(V2_DEFAULT_TIMEOUT_SECONDS));

  app.get<{ Querystring: ListQuery }>('/v2/sandboxes', { schema: listSchema }, (request, reply) => {
    const { items, nextToken } = sb.list(request.principal, request.query);
    if (nextToken) reply.header('x-next-token', nextToken);
    return reply.send(items);
  });

  app.get<{ Querystring: { metadata?: string } }>('/sandboxes', (request) => {
    const q = typeof request.query.metadata === 'string' ? { metadata: request.query.metadata } : {};
    return sb.list(request.principal, { ...q, state: 'running', limit: 1000 }).items;
  });

  app.get<IdRoute>('/sandboxes/:sandboxID', { schema: { params: idParams } }, (request) =>
    sb.detail(request.principal, request.params.sandboxID),
  );

  app.delete<IdRoute>('/sandboxes/:sandboxID', { schema: { params: idParams } }, async (request, reply) => {
    await sb.kill(request.principal, request.params.sandboxID);
    request.log.info(
      { keyId: request.principal.keyId, sandbox: request.params.sandboxID },
      'e2b sandbox killed',
    );
    return reply.status(204).send();
  });

  app.post<IdRoute & { Body: { timeout: number } }>(
    '/sandboxes/:sandboxID/timeout',
    { schema: timeoutSchema },
    async (request, reply) => {
      await sb.setTimeout(request.principal, request.params.sandboxID, request.body.timeout);
      return reply.status(204).send();
    },
  );

  app.post<IdRoute & { Body: { duration?: number } | undefined }>(
    '/sandboxes/:sandboxID/refreshes',
    async (request, reply) => {
      const duration = request.body?.duration;
      await sb.setTimeout(
        request.principal,
        request.params.sandboxID,
        typeof duration === 'number' ? duration : 60,
      );
      return reply.status(204).send();
    },
  );

  app.post<IdRoute>('/sandboxes/:sandboxID/pause', { schema: pauseSchema }, async (request, reply) => {
    const { signal, dispose } = responseSignal(reply.raw);
    try {
      await sb.pause(request.principal, request.params.sandboxID, signal);
    } finally {
      dispose();
    }
    return reply.status(204).send();
  });

  const connect = async (
    request: FastifyRequest<IdRoute & { Body: { timeout?: number } | undefined }>,
    reply: FastifyReply,
  ): Promise<FastifyReply> => {
    const { signal, dispose } = responseSignal(reply.raw);
    try {
      const { answer, resumed } = await sb.connect(
        request.principal,
        request.params.sandboxID,
        request.body?.timeout,
        signal,
      );
      return await reply.status(resumed ? 201 : 200).send(answer);
    } finally {
      dispose();
    }
  };
  app.post('/sandboxes/:sandboxID/connect', { schema: connectSchema }, connect);
  app.post('/v2/sandboxes/:sandboxID/connect', { schema: connectSchema }, connect);
  app.post('/sandboxes/:sandboxID/resume', { schema: connectSchema }, connect);

  app.get(
    '/sandboxes/:sandboxID/metrics',
    { schema: { params: idParams } },
    async (request: FastifyRequest<IdRoute>) => {
      await sb.session(request.principal, request.params.sandboxID);
      return [];
    },
  );
  app.post('/sandboxes/:sandboxID/fork', unsupported('forking a sandbox'));
  app.post('/sandboxes/:sandboxID/snapshots', unsupported('snapshots'));
  app.get('/snapshots', unsupported('snapshots'));
  app.put('/sandboxes/:sandboxID/network', unsupported('network configuration'));
  app.get('/sandboxes/:sandboxID/logs', unsupported('sandbox logs'));
  app.get('/v2/sandboxes/:sandboxID/logs', unsupported('sandbox logs'));
  done();
}
