/**
 * The code interpreter of a session (ADR 0033): run code in a named context (a Jupyter kernel in
 * the sandbox, started on first use) and get the whole run back (JSON) or its events as they come
 * (NDJSON); list, start, interrupt, restart and remove contexts. Same API-key auth and tenant
 * checks as exec; the agent's events are bounded and validated line by line (exec/guards/code-guard.ts),
 * and a gathered run takes its memory from the shared answer budget.
 */
import type { CodeRunRequest } from '@sandbox-platform/api';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

import { logBrokeOff } from '../../plugins/errors.js';
import { responseHold } from '../../plugins/limits.js';
import { resolveNamespace } from '../../service/namespaces.js';
import type { RunOptions } from '../../service/code-service.js';
import type { SessionRef } from '../../service/process-service.js';
import { traceOption } from '../../tracing/request-trace.js';
import { responseSignal } from '../request-signal.js';
import { actionSchema, createSchema, listSchema, removeSchema, runSchema, streamSchema } from './schemas.js';

type Ns = { namespace?: string };
type SessionRoute = { Params: { name: string }; Querystring: Ns };
type ContextRoute = { Params: { name: string; context: string }; Querystring: Ns };
type RunRoute = SessionRoute & { Body: CodeRunRequest & { waitSeconds?: number } };
type CreateRoute = SessionRoute & { Body: { name: string; language?: 'python' } };

function ref(request: FastifyRequest<{ Params: { name: string }; Querystring: Ns }>): SessionRef {
  return {
    namespace: resolveNamespace(request.principal, request.query.namespace),
    name: request.params.name,
  };
}

/** The call options of a request: its cancel signal, trace, CPU share and answer budget. */
function runOptions(
  app: FastifyInstance,
  request: FastifyRequest,
  reply: FastifyReply,
): RunOptions & { dispose: () => void } {
  const { signal, dispose } = responseSignal(reply.raw);
  const hold = responseHold(reply.raw, app.answerBudget);
  return {
    signal,
    dispose,
    meter: app.cpuMeters.forKey(request.principal.keyId),
    lineHold: (bytes) => hold.tryTake(bytes),
    ...traceOption(request),
  };
}

export default function codeRoutes(app: FastifyInstance, _opts: unknown, done: (err?: Error) => void): void {
  const base = '/v1/sessions/:name/code';

  app.post<RunRoute>(base, { schema: runSchema(app.config.exec) }, async (request, reply) => {
    const { waitSeconds, ...req } = request.body;
    const { dispose, ...opts } = runOptions(app, request, reply);
    try {
      return await app.codeRuns.run(ref(request), req, opts, waitSeconds);
    } finally {
      dispose();
    }
  });

  app.post<RunRoute>(`${base}/stream`, { schema: streamSchema(app.config.exec) }, async (request, reply) => {
    const { waitSeconds, ...req } = request.body;
    const { dispose, ...opts } = runOptions(app, request, reply);
    try {
      const stream = await app.codeRuns.stream(ref(request), req, opts, waitSeconds);
      stream.once('close', dispose);
      stream.once('error', (err: Error) =>
        logBrokeOff(request, request.params.name, err, 'code stream broke off'),
      );
      return reply.type('application/x-ndjson').header('cache-control', 'no-store').send(stream);
    } catch (err) {
      dispose();
      throw err;
    }
  });

  app.get<SessionRoute>(`${base}/contexts`, { schema: listSchema }, (request, reply) =>
    withSignal(reply, request, (o) => app.codeRuns.list(ref(request), o)),
  );

  app.post<CreateRoute>(`${base}/contexts`, { schema: createSchema }, async (request, reply) => {
    const at = ref(request);
    const before = await withSignal(reply, request, (o) => app.codeRuns.list(at, o));
    const info = await withSignal(reply, request, (o) => app.codeRuns.create(at, request.body, o));
    const existed = before.contexts.some((c) => c.name === request.body.name);
    return reply.status(existed ? 200 : 201).send(info);
  });

  app.delete<ContextRoute>(`${base}/contexts/:context`, { schema: removeSchema }, async (request, reply) => {
    await withSignal(reply, request, (o) => app.codeRuns.remove(ref(request), request.params.context, o));
    return reply.status(204).send();
  });

  app.post<ContextRoute>(
    `${base}/contexts/:context/interrupt`,
    { schema: actionSchema('interrupt') },
    (request, reply) =>
      withSignal(reply, request, (o) => app.codeRuns.interrupt(ref(request), request.params.context, o)),
  );

  app.post<ContextRoute>(
    `${base}/contexts/:context/restart`,
    { schema: actionSchema('restart') },
    (request, reply) =>
      withSignal(reply, request, (o) => app.codeRuns.restart(ref(request), request.params.context, o)),
  );
  done();
}

async function withSignal<T>(
  reply: FastifyReply,
  request: FastifyRequest,
  fn: (opts: RunOptions) => Promise<T>,
): Promise<T> {
  const { signal, dispose } = responseSignal(reply.raw);
  try {
    return await fn({ signal, ...traceOption(request) });
  } finally {
    dispose();
  }
}
