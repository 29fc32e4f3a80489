/**
 * The JSON body parser: fastify's own (with its prototype-poisoning protection), except that an
 * empty body on a method that takes none (DELETE, OPTIONS) is no body rather than a 400. Many
 * HTTP clients and SDKs send `Content-Type: application/json` on every request, so
 * `DELETE /v1/sessions/x` with that header and `Content-Length: 0` must work.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

/** Methods whose requests carry no body in this API. */
const BODYLESS = new Set(['DELETE', 'OPTIONS', 'GET', 'HEAD']);

export default fp(
  (app: FastifyInstance, _opts: unknown, done: (err?: Error) => void) => {
    const parse = app.getDefaultJsonParser('error', 'error');
    app.removeContentTypeParser('application/json');
    app.addContentTypeParser(
      'application/json',
      { parseAs: 'string' },
      (request: FastifyRequest, body: string | Buffer, next: (err: Error | null, body?: unknown) => void) => {
        if (body.length === 0 && BODYLESS.has(request.method)) return next(null, undefined);
        void parse(request, body as string, next);
      },
    );
    done();
  },
  { name: 'json-body', fastify: '5.x' },
);
