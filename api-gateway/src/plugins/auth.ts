/**
 * Bearer API key authentication for every route except those marked `config: { public: true }`.
 * 401 (with WWW-Authenticate) without a valid key; which namespaces the key may use is decided per
 * request by service/namespaces.ts. The key itself is never logged; the key id is.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

import type { KeyAuthenticator, Principal } from '../auth/keys.js';
import { ProblemError } from '../errors.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated caller; set on every non-public route. */
    principal: Principal;
  }
  interface FastifyContextConfig {
    /** Routes that need no API key (health, OpenAPI). */
    public?: boolean;
  }
}

/** Options: the loaded key set. */
export interface AuthPluginOptions {
  keys: KeyAuthenticator;
}

type HookDone = (err?: Error) => void;

const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;

/** The presented key of a request, if it carries a well-formed bearer header. */
export function bearerToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  return BEARER.exec(header)?.[1];
}

export default fp<AuthPluginOptions>(
  (app: FastifyInstance, opts: AuthPluginOptions, done: (err?: Error) => void) => {
    app.decorateRequest('principal', undefined as unknown as Principal);
    // A callback hook, not an async one: fastify then runs the next step synchronously instead of
    // after a promise settles (this hook runs on every request).
    app.addHook('onRequest', (request: FastifyRequest, _reply: FastifyReply, hookDone: HookDone) => {
      if (request.routeOptions.config.public === true) return hookDone();
      const presented = bearerToken(request.headers.authorization);
      const principal = presented === undefined ? undefined : opts.keys.authenticate(presented);
      if (!principal) {
        return hookDone(
          new ProblemError(
            'unauthorized',
            presented === undefined ? 'missing bearer API key' : 'invalid API key',
          ),
        );
      }
      request.principal = principal;
      hookDone();
    });
    done();
  },
  { name: 'auth', fastify: '5.x', dependencies: ['errors'] },
);
