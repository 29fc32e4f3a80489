/**
 * The terminal's API key from a browser (ADR 0032). A browser cannot set Authorization on a
 * WebSocket; the only header a page controls there is Sec-WebSocket-Protocol. The console offers
 * two subprotocols: `sandbox-console.v1` and `sandbox-key.<base64url of the key>`. For the
 * terminal route only, this hook (registered just before plugins/auth.ts) turns the second into
 * `Authorization: Bearer` and removes it from the offered list, so the server selects
 * `sandbox-console.v1` and the key is never echoed back nor passed on. The key so stays out of
 * URLs and cookies: nothing a cross-site page can send carries it, and the Origin check of the
 * terminal route (routes/ws-origin.ts) still applies.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

/** The subprotocol the server selects. */
export const CONSOLE_PROTOCOL = 'sandbox-console.v1';
/** Prefix of the subprotocol that carries the key. */
export const KEY_PROTOCOL_PREFIX = 'sandbox-key.';
/** The only route that takes the key this way. */
const PTY_ROUTE = '/v1/sessions/:name/pty';
/** Longest encoded key taken (keys are at least 24 characters; files hold far shorter ones). */
const MAX_ENCODED_KEY = 1024;
const B64URL = /^[A-Za-z0-9_-]+$/;

/**
 * Splits an offered protocol list into the key (decoded, if one is offered and well-formed) and
 * the other protocols.
 */
export function splitKeyProtocol(offered: string): { key: string | undefined; rest: string[] } {
  const all = offered
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  const rest = all.filter((p) => !p.startsWith(KEY_PROTOCOL_PREFIX));
  const encoded = all.find((p) => p.startsWith(KEY_PROTOCOL_PREFIX))?.slice(KEY_PROTOCOL_PREFIX.length);
  if (encoded === undefined || encoded.length > MAX_ENCODED_KEY || !B64URL.test(encoded))
    return { key: undefined, rest };
  const key = Buffer.from(encoded, 'base64url').toString('utf8');
  return { key: key.length > 0 ? key : undefined, rest };
}

export default fp(
  (app: FastifyInstance, _opts: unknown, done: (err?: Error) => void) => {
    app.addHook(
      'onRequest',
      (request: FastifyRequest, _reply: FastifyReply, hookDone: (err?: Error) => void) => {
        const offered = request.raw.headers['sec-websocket-protocol'];
        if (!request.ws || typeof offered !== 'string' || request.routeOptions.url !== PTY_ROUTE)
          return hookDone();
        const { key, rest } = splitKeyProtocol(offered);
        // The key's protocol never stays in the request, whether it is used or not.
        if (rest.length > 0) request.raw.headers['sec-websocket-protocol'] = rest.join(', ');
        else delete request.raw.headers['sec-websocket-protocol'];
        if (key !== undefined && request.headers.authorization === undefined) {
          request.raw.headers.authorization = `Bearer ${key}`;
        }
        hookDone();
      },
    );
    done();
  },
  { name: 'console-ws-key', fastify: '5.x' },
);
