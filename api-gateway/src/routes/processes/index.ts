/**
 * Background processes of a session (ADR 0018): start, list, describe, remove, read output from
 * offsets, follow it as NDJSON, signal, wait. Same API-key auth and tenant checks as exec (the
 * namespace is resolved for the key before anything is looked up); the agent's answers are
 * bounded and validated (exec/agent/agent-processes.ts) and its problems passed through.
 */
import { PROCESS_ID_PATTERN, PROCESS_SIGNALS, type ProcessSignal } from '@sandbox-platform/api';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

import { ProblemError } from '../../errors.js';
import { logBrokeOff } from '../../plugins/errors.js';
import { responseHold } from '../../plugins/limits.js';
import { resolveNamespace } from '../../service/namespaces.js';
import type { SessionRef } from '../../service/process-service.js';
import { responseSignal } from '../request-signal.js';
import { traceOption } from '../../tracing/request-trace.js';
import type { TraceContext } from '../../tracing/tracing-config.js';
import {
  DEFAULT_FOLLOW_SECONDS,
  describeSchema,
  followSchema,
  listSchema,
  outputSchema,
  removeSchema,
  signalSchema,
  startSchema,
  waitSchema,
} from './schemas.js';

type Ns = { namespace?: string };
type SessionRoute = { Params: { name: string }; Querystring: Ns };
type ProcessRoute = { Params: { name: string; id: string }; Querystring: Ns };
type StartRoute = SessionRoute & {
  Body: { command: string; cwd?: string; env?: Record<string, string>; waitSeconds?: number };
};
type OutputRoute = ProcessRoute & {
  Querystring: Ns & { stdoutOffset?: number; stderrOffset?: number; maxBytes?: number };
};
type FollowRoute = ProcessRoute & {
  Querystring: Ns & { stdoutOffset?: number; stderrOffset?: number; timeoutSeconds?: number };
};
type SignalRoute = ProcessRoute & { Body: { signal: string } };
type WaitRoute = ProcessRoute & { Querystring: Ns & { timeoutSeconds?: number } };

const ID = new RegExp(PROCESS_ID_PATTERN);
const SIGNALS: ReadonlySet<string> = new Set(PROCESS_SIGNALS);
/** Wait of a `wait` call that names none (the agent's default). */
const DEFAULT_WAIT_SECONDS = 30;

/** The session of a request, for the caller's key (403 for a namespace the key may not use). */
function ref(request: FastifyRequest<{ Params: { name: string }; Querystring: Ns }>): SessionRef {
  return {
    namespace: resolveNamespace(request.principal, request.query.namespace),
    name: request.params.name,
  };
}

/** The id when well formed; a malformed one names no process (404, without asking the agent). */
function processId(id: string): string {
  if (!ID.test(id))
    throw new ProblemError('process-not-found', `no process has the id ${JSON.stringify(id)}`);
  return id;
}

function allowedSignal(name: string): ProcessSignal {
  if (!SIGNALS.has(name)) {
    throw new ProblemError(
      'signal-not-allowed',
      `signal must be one of ${PROCESS_SIGNALS.join(', ')}; got ${JSON.stringify(name.slice(0, 32))}`,
    );
  }
  return name as ProcessSignal;
}

/**
 * Runs a call with the response's cancel signal (the client leaving cancels the agent call) and the
 * request's trace context (tracing on).
 */
async function withSignal<T>(
  reply: FastifyReply,
  fn: (opts: { signal: ReturnType<typeof responseSignal>['signal']; trace?: TraceContext }) => Promise<T>,
): Promise<T> {
  const { signal, dispose } = responseSignal(reply.raw);
  try {
    return await fn({ signal, ...traceOption(reply.request) });
  } finally {
    dispose();
  }
}

export default function processRoutes(
  app: FastifyInstance,
  _opts: unknown,
  done: (err?: Error) => void,
): void {
  const base = '/v1/sessions/:name/processes';

  app.post<StartRoute>(base, { schema: startSchema(app.config.exec) }, async (request, reply) => {
    const { waitSeconds, ...req } = request.body;
    const at = ref(request);
    const info = await withSignal(reply, (o) => app.processes.start(at, req, o, waitSeconds));
    request.log.info(
      { keyId: request.principal.keyId, namespace: at.namespace, session: at.name, process: info.id },
      'process started',
    );
    const location = `/v1/sessions/${at.name}/processes/${info.id}?namespace=${at.namespace}`;
    return reply.status(201).header('location', location).send(info);
  });

  app.get<SessionRoute>(base, { schema: listSchema }, (request, reply) =>
    withSignal(reply, (o) => app.processes.list(ref(request), o)),
  );

  app.get<ProcessRoute>(`${base}/:id`, { schema: describeSchema }, (request, reply) =>
    withSignal(reply, (o) => app.processes.describe(ref(request), processId(request.params.id), o)),
  );

  app.delete<ProcessRoute>(`${base}/:id`, { schema: removeSchema }, async (request, reply) => {
    await withSignal(reply, (o) => app.processes.remove(ref(request), processId(request.params.id), o));
    return reply.status(204).send();
  });

  app.get<OutputRoute>(`${base}/:id/output`, { schema: outputSchema }, (request, reply) => {
    const { namespace: _ns, ...query } = request.query;
    const hold = { tryTake: (n: number) => responseHold(reply.raw, app.answerBudget).tryTake(n) };
    const meter = app.cpuMeters.forKey(request.principal.keyId);
    return withSignal(reply, (o) =>
      app.processes.output(ref(request), processId(request.params.id), query, { ...o, hold, meter }),
    );
  });

  app.get<FollowRoute>(`${base}/:id/output/stream`, { schema: followSchema }, async (request, reply) => {
    const { namespace: _ns, timeoutSeconds, ...offsets } = request.query;
    const deadlineAt = Date.now() + (timeoutSeconds ?? DEFAULT_FOLLOW_SECONDS) * 1000;
    const at = ref(request);
    const id = processId(request.params.id);
    const { signal, dispose } = responseSignal(reply.raw);
    try {
      const meter = app.cpuMeters.forKey(request.principal.keyId);
      const stream = await app.processes.follow(
        at,
        id,
        { ...offsets, deadlineAt },
        {
          signal,
          meter,
          ...traceOption(request),
        },
      );
      stream.once('close', dispose);
      // Headers are out by the time a stream fails: the connection is cut and this line says why.
      stream.once('error', (err: Error) =>
        logBrokeOff(request, request.params.name, err, 'process follow broke off'),
      );
      return reply.type('application/x-ndjson').header('cache-control', 'no-store').send(stream);
    } catch (err) {
      dispose();
      throw err;
    }
  });

  app.post<SignalRoute>(`${base}/:id/signal`, { schema: signalSchema }, (request, reply) => {
    const at = ref(request);
    const id = processId(request.params.id);
    const signal = allowedSignal(request.body.signal);
    return withSignal(reply, (o) => app.processes.signal(at, id, signal, o));
  });

  app.get<WaitRoute>(`${base}/:id/wait`, { schema: waitSchema }, (request, reply) => {
    const seconds = request.query.timeoutSeconds ?? DEFAULT_WAIT_SECONDS;
    return withSignal(reply, (o) =>
      app.processes.wait(ref(request), processId(request.params.id), seconds, o),
    );
  });
  done();
}
