/**
 * /console: the web console's page and files (ADR 0032), public (the page asks for an API key and
 * keeps it in sessionStorage; it is sent as a header, never in a URL or cookie). Links in the page
 * are relative, so the console works behind a path prefix: `/console` redirects to `console/`.
 * index.html gets a fresh CSP nonce per answer and is never cached; the other files are
 * revalidated by ETag and sent gzipped (compressed once at start) to clients that accept it.
 */
import { randomBytes } from 'node:crypto';

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

import { ProblemError } from '../errors.js';
import { renderIndex, type ConsoleAssets } from './assets.js';
import { consoleHeaders } from './csp.js';

/** Options: the files. */
export interface ConsoleRoutesOptions {
  assets: ConsoleAssets;
}

/** No API key: the page asks for one. Public routes are left out of the OpenAPI document. */
const config = { public: true };

export default function consoleRoutes(
  app: FastifyInstance,
  opts: ConsoleRoutesOptions,
  done: (err?: Error) => void,
): void {
  const { assets } = opts;
  // Relative: behind a prefix (/sandbox/console) the browser resolves it to /sandbox/console/.
  app.get('/console', { config }, (_request, reply) => reply.code(301).header('location', 'console/').send());
  app.get('/console/', { config }, (_request, reply) => {
    const nonce = randomBytes(18).toString('base64');
    return reply
      .headers(consoleHeaders(nonce))
      .header('cache-control', 'no-store')
      .type('text/html; charset=utf-8')
      .send(renderIndex(assets, nonce));
  });
  app.get<{ Params: { file: string } }>(
    '/console/:file',
    { config },
    (request: FastifyRequest<{ Params: { file: string } }>, reply: FastifyReply) => {
      const file = assets.files.get(request.params.file);
      if (!file)
        throw new ProblemError('not-found', `the console has no file ${request.params.file.slice(0, 100)}`);
      // console.js is about 370 KB, 100 KB gzipped: gzip whenever the client takes it.
      const gzip = /\bgzip\b/.test(String(request.headers['accept-encoding'] ?? ''));
      const { body, etag } = gzip ? file.gzip : file;
      void reply
        .headers(consoleHeaders('none'))
        .header('cache-control', 'no-cache')
        .header('vary', 'accept-encoding')
        .header('etag', etag);
      if (request.headers['if-none-match'] === etag) return reply.code(304).send();
      if (gzip) void reply.header('content-encoding', 'gzip');
      return reply.type(file.contentType).send(body);
    },
  );
  done();
}
