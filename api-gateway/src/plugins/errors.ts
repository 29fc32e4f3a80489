/**
 * The one error handler: every failure becomes RFC 9457 application/problem+json with a stable
 * `type`. Validation and parser errors are the caller's (4xx, with detail); anything unexpected is
 * logged once here with its cause and answered with a generic 500 body.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

import {
  PROBLEMS,
  ProblemError,
  isCallerGone,
  isProblemError,
  problemBody,
  type ProblemSlug,
} from '../errors.js';

/** Problem slug of a fastify 4xx by status. */
const BY_STATUS: Record<number, ProblemSlug> = {
  400: 'invalid-request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not-found',
  405: 'method-not-allowed',
  413: 'payload-too-large',
  415: 'unsupported-media-type',
};

interface ValidationEntry {
  instancePath?: string;
  message?: string;
  params?: { additionalProperty?: string };
}

/** A readable sentence for an ajv validation failure, naming an unknown field when that is the cause. */
function validationDetail(
  err: FastifyError & { validation?: ValidationEntry[]; validationContext?: string },
): string {
  const first = err.validation?.[0];
  if (!first) return err.message;
  const where = `${err.validationContext ?? 'request'}${first.instancePath ?? ''}`;
  const extra = first.params?.additionalProperty;
  return extra ? `${where}: unknown field "${extra}"` : `${where} ${first.message ?? 'is invalid'}`;
}

/** Maps any error to a ProblemError. */
export function toProblem(err: unknown): ProblemError {
  if (isProblemError(err)) return err;
  const fe = err as FastifyError & { validation?: ValidationEntry[] };
  if (fe.validation) return new ProblemError('invalid-request', validationDetail(fe));
  const status = typeof fe.statusCode === 'number' ? fe.statusCode : 500;
  if (status >= 400 && status < 500) {
    const slug = BY_STATUS[status] ?? 'invalid-request';
    return new ProblemError(slug, fe.message);
  }
  return new ProblemError('internal', undefined, { cause: err });
}

/**
 * Logs a failure once, here. Unexpected failures (500) at error with the cause chain; expected
 * 5xx states (sandbox not ready, unreachable, timing out) at warn with their cause's message;
 * the caller's mistakes (4xx) at debug.
 */
function logProblem(request: FastifyRequest, problem: ProblemError): void {
  if (problem.slug === 'internal') {
    request.log.error({ err: problem.cause ?? problem, slug: problem.slug }, 'request failed');
  } else if (problem.status >= 500) {
    const cause = causeMessage(problem.cause);
    request.log.warn({ slug: problem.slug, detail: problem.detail, cause }, 'request failed');
  } else {
    request.log.debug({ slug: problem.slug, detail: problem.detail }, 'request refused');
  }
}

/**
 * The message of a cause, also for non-Error causes: a WebSocket 'error' event (pods/exec through
 * the API server) is an ErrorEvent whose only useful part is its message, e.g. "Unexpected server
 * response: 403". Without it the log says only that exec failed.
 */
export function causeMessage(cause: unknown): string | undefined {
  if (cause instanceof Error) return cause.message;
  if (typeof cause === 'object' && cause !== null && 'message' in cause) {
    const { message } = cause;
    if (typeof message === 'string') return message;
  }
  if (cause === undefined) return undefined;
  return typeof cause === 'string' ? cause : JSON.stringify(cause);
}

/**
 * The caller went away (or its request broke off: node:http has answered a request timeout with
 * 408 itself) while the route waited for the sandbox: nobody is left to answer. The request ends
 * here without an answer (its connection is closed, if it was not already), and it is not the
 * sandbox's failure: one line at debug, never a warning or a 5xx.
 */
function abandoned(request: FastifyRequest, reply: FastifyReply, cause: unknown): void {
  request.log.debug({ cause: causeMessage(cause) }, 'request abandoned by the caller');
  reply.hijack();
  reply.raw.destroy();
}

/**
 * Logs why a streamed answer broke off once its headers were out (the connection is cut: this is
 * the one line that says why): a warning with its problem, or a debug line when it was the caller
 * that went away.
 */
export function logBrokeOff(request: FastifyRequest, session: string, err: Error, message: string): void {
  if (isCallerGone(err)) {
    request.log.debug({ session, cause: causeMessage(err.cause) }, `${message}: the caller went away`);
    return;
  }
  const problem = toProblem(err);
  request.log.warn(
    { session, slug: problem.slug, detail: problem.detail, cause: causeMessage(problem.cause) },
    message,
  );
}

/** Writes a problem reply. */
export function sendProblem(reply: FastifyReply, problem: ProblemError): FastifyReply {
  if (problem.retryAfterSeconds !== undefined) reply.header('retry-after', String(problem.retryAfterSeconds));
  if (problem.slug === 'unauthorized') reply.header('www-authenticate', 'Bearer');
  return reply.status(problem.status).type('application/problem+json').send(problem.toBody());
}

export default fp(
  (app: FastifyInstance, _opts: unknown, done: (err?: Error) => void) => {
    app.setErrorHandler((err: unknown, request: FastifyRequest, reply: FastifyReply) => {
      if (isCallerGone(err)) return void abandoned(request, reply, err.cause);
      const problem = toProblem(err);
      logProblem(request, problem);
      if (problem.status >= 500 && problem.slug === 'internal') {
        return sendProblem(reply, new ProblemError('internal'));
      }
      return sendProblem(reply, problem);
    });
    app.setNotFoundHandler((request: FastifyRequest, reply: FastifyReply) =>
      sendProblem(
        reply,
        new ProblemError('not-found', `no route ${request.method} ${request.url.split('?')[0]}`),
      ),
    );
    done();
  },
  { name: 'errors', fastify: '5.x' },
);

/** The problem table, for the OpenAPI document. */
export const problemSchema = {
  type: 'object',
  required: ['type', 'title', 'status'],
  properties: {
    type: { type: 'string', enum: Object.keys(PROBLEMS).map((s) => problemBody(s as ProblemSlug).type) },
    title: { type: 'string' },
    status: { type: 'integer' },
    detail: { type: 'string' },
    reason: { type: 'string' },
  },
  additionalProperties: true,
} as const;
