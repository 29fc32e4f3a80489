/**
 * Exec routes: buffered (JSON result) and streaming (NDJSON passthrough). The stream route also
 * takes an NDJSON body (`content-type: application/x-ndjson`): the exec request on its first line,
 * checked like a JSON body, then stdin lines forwarded to the agent as they arrive (streamed-stdin.ts).
 */
import { hash } from 'node:crypto';
import type { Readable } from 'node:stream';

import { NDJSON_CONTENT_TYPE } from '@sandbox-platform/api';
import type { FastifyInstance, FastifyRequest } from 'fastify';

import { ProblemError } from '../../errors.js';
import { logBrokeOff } from '../../plugins/errors.js';
import { responseHold } from '../../plugins/limits.js';
import { resolveNamespace } from '../../service/namespaces.js';
import type { ExecInput } from '../../service/exec-service.js';
import { responseSignal } from '../request-signal.js';
import { traceOption } from '../../tracing/request-trace.js';
import { EXEC_STDIN_BODY_BYTES, execSchema, execStreamSchema } from './schemas.js';
import { isNdjsonRequest, readRequestLine, streamStdin } from './streamed-stdin.js';

type ExecRoute = { Params: { name: string }; Querystring: { namespace?: string }; Body: ExecInput };

/** A short, non-reversible fingerprint of a command for the audit log (commands may hold secrets). */
function commandDigest(command: string): string {
  return hash('sha256', command, 'hex').slice(0, 16);
}

export default function execRoutes(app: FastifyInstance, _opts: unknown, done: (err?: Error) => void): void {
  const limits = app.config.exec;
  /** The body after the request line of an NDJSON stream request (its stdin lines), until read. */
  const stdinBodies = new WeakMap<FastifyRequest, Readable>();
  app.addContentTypeParser(NDJSON_CONTENT_TYPE, async (request: FastifyRequest, payload: Readable) => {
    if (!request.routeOptions.url?.endsWith('/exec/stream')) {
      throw new ProblemError('unsupported-media-type', 'only exec/stream takes an NDJSON body');
    }
    const body = await readRequestLine(payload, app.config.maxBodyBytes);
    stdinBodies.set(request, payload);
    return body;
  });
  // A full stdin fits on top of the body limit (the schema bounds stdin itself); the rest of the
  // body is still held to the limit.
  const bodyLimit = app.config.maxBodyBytes + EXEC_STDIN_BODY_BYTES;
  const preValidation = (
    request: FastifyRequest<ExecRoute>,
    _reply: unknown,
    hookDone: (err?: Error) => void,
  ): void => {
    // The request line of an NDJSON body was bounded as it was read (readRequestLine).
    if (isNdjsonRequest(request)) return hookDone();
    const stdin = (request.body as { stdin?: unknown } | undefined)?.stdin;
    const rest =
      Number(request.headers['content-length'] ?? 0) - (typeof stdin === 'string' ? stdin.length : 0);
    if (rest > app.config.maxBodyBytes) {
      const detail = `the request without its stdin is ${rest} bytes; the limit is ${app.config.maxBodyBytes}`;
      return hookDone(new ProblemError('payload-too-large', detail));
    }
    hookDone();
  };

  app.post<ExecRoute>(
    '/v1/sessions/:name/exec',
    { schema: execSchema(limits), bodyLimit, preValidation },
    async (request: FastifyRequest<ExecRoute>, reply) => {
      const namespace = resolveNamespace(request.principal, request.query.namespace);
      const { signal, dispose } = responseSignal(reply.raw);
      try {
        // A large answer takes its memory from the shared budget until this response is done.
        // (Made on first use: most answers are small and take nothing.)
        const hold = { tryTake: (n: number) => responseHold(reply.raw, app.answerBudget).tryTake(n) };
        const meter = app.cpuMeters.forKey(request.principal.keyId);
        const result = await app.execs.exec(namespace, request.params.name, request.body, {
          signal,
          hold,
          meter,
          ...traceOption(request),
        });
        // The audit line is written after the response (formatting and writing it costs more than
        // the rest of the route): setImmediate runs once the reply's write was issued.
        setImmediate(() =>
          request.log.info(
            {
              keyId: request.principal.keyId,
              namespace,
              session: request.params.name,
              command: commandDigest(request.body.command),
              exitCode: result.exitCode,
              ms: result.durationMs,
            },
            'exec',
          ),
        );
        return result;
      } finally {
        dispose();
      }
    },
  );

  app.post<ExecRoute>(
    '/v1/sessions/:name/exec/stream',
    { schema: execStreamSchema(limits), bodyLimit, preValidation },
    async (request, reply) => {
      const namespace = resolveNamespace(request.principal, request.query.namespace);
      const stdinBody = stdinBodies.get(request);
      if (stdinBody && request.body.stdin !== undefined) {
        throw new ProblemError(
          'invalid-request',
          'in an NDJSON request, stdin comes as {"type":"stdin"} lines after the request line',
        );
      }
      const { signal, dispose } = responseSignal(reply.raw);
      let stdinLines: Readable | undefined;
      try {
        const meter = app.cpuMeters.forKey(request.principal.keyId);
        stdinLines = stdinBody
          ? streamStdin(stdinBody, { maxBytes: app.config.maxExecStdinStreamBytes }, meter)
          : undefined;
        const stream = await app.execs.execStream(namespace, request.params.name, request.body, {
          signal,
          meter,
          ...(stdinLines ? { stdinLines } : {}),
          ...traceOption(request),
        });
        stream.once('close', dispose);
        // Headers are out by the time a stream fails: the connection is cut (the client sees a
        // truncated stream) and this is the one line that says why.
        stream.once('error', (err: Error) =>
          logBrokeOff(request, request.params.name, err, 'exec stream broke off'),
        );
        request.log.info(
          {
            keyId: request.principal.keyId,
            namespace,
            session: request.params.name,
            command: commandDigest(request.body.command),
          },
          'exec stream',
        );
        return reply.type('application/x-ndjson').header('cache-control', 'no-store').send(stream);
      } catch (err) {
        stdinLines?.destroy();
        dispose();
        throw err;
      }
    },
  );
  done();
}
