/**
 * Requests on preview origins (ADR 0032), routed here by rewrite.ts whatever their path:
 * - `GET /__sandbox_preview_auth?token=...` (the link): the token must be genuine, unexpired and
 *   for this very origin (port, session, namespace) and for the session as it is now (its UID);
 *   then the cookie is set on this origin only and the browser is sent to `/` (303);
 * - anything else: the request must carry a cookie whose token passes the same checks; then it is
 *   proxied to the port like the port route (exec/relay/port-proxy.ts: hop-by-hop headers, deadlines,
 *   body limit), without the preview cookie (the sandbox's server never sees it), with the
 *   origin's other cookies both ways (the origin is the sandbox's own), from the upstream pool of
 *   the API key that made the link. WebSocket upgrades too, from this origin only (Origin check).
 * A refusal is 401 preview-unauthorized naming why (no cookie, expired, another origin's link,
 * the session deleted); a host under the preview domain that names no preview is 404.
 */
import type {} from '@fastify/websocket';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type WebSocket from 'ws';

import { ProblemError } from '../errors.js';
import { proxyToPort } from '../exec/relay/port-proxy.js';
import { PortUpstreams } from '../exec/relay/port-upstreams.js';
import { UpgradeRefusedError, dialWebSocket } from '../exec/relay/ws-dial.js';
import { bridgeSockets } from '../exec/relay/ws-bridge.js';
import { PORT_PROXY_TIMEOUT_MS } from '../routes/ports/index.js';
import { checkOrigin } from '../routes/ws-origin.js';
import { traceOption } from '../tracing/request-trace.js';
import type { PreviewConfig } from './config.js';
import { cookieName, cookieValues, setCookie, withoutCookie } from './cookie.js';
import type { PreviewAddress } from './host.js';
import { PREVIEW_AUTH_PATH, checkPreviewPort } from './links.js';
import { PREVIEW_ROUTE, previewRequestOf, type PreviewRequest } from './rewrite.js';
import type { PreviewClaims, PreviewTokens, TokenRefusal } from './token.js';

/** Bytes waiting for one side of a proxied WebSocket before the other side is paused. */
const WS_MAX_BUFFERED_BYTES = 1024 * 1024;
/** Largest WebSocket message relayed from the sandbox. */
const WS_MAX_MESSAGE_BYTES = 1024 * 1024;

/** What the routes need. */
export interface PreviewProxyOptions {
  preview: PreviewConfig;
  tokens: PreviewTokens;
  /** Now, in ms. */
  now: () => number;
}

/** A checked preview request: where it goes and whose link let it in. */
interface Admitted {
  address: PreviewAddress;
  claims: PreviewClaims;
  podIP: string;
  url: string;
}

const REFUSALS: Record<TokenRefusal, string> = {
  malformed: 'is malformed',
  'bad-signature': 'has a bad signature',
  expired: 'has expired: open a new preview link',
};

function unauthorized(detail: string): ProblemError {
  return new ProblemError('preview-unauthorized', detail);
}

/** The claims of the first token that is genuine, unexpired and for this origin, else a 401. */
export function authorize(
  tokens: readonly string[],
  address: PreviewAddress,
  o: { tokens: PreviewTokens; nowSeconds: number; what: string },
): PreviewClaims {
  if (tokens.length === 0) {
    throw unauthorized(`no preview ${o.what}: open this preview through a link from the console or the API`);
  }
  let why = '';
  for (const token of tokens) {
    const r = o.tokens.verify(token, o.nowSeconds);
    if ('refused' in r) {
      why ||= `the preview ${o.what} ${REFUSALS[r.refused]}`;
      continue;
    }
    const c = r.claims;
    if (c.port === address.port && c.session === address.session && c.namespace === address.namespace)
      return c;
    why ||= `the preview ${o.what} is for another origin (port ${c.port} of ${c.namespace}/${c.session})`;
  }
  throw unauthorized(why);
}

/** The preview request of a routed request (404 when the host names no preview or none at all). */
function previewOf(request: FastifyRequest): PreviewRequest & { address: PreviewAddress } {
  const p = previewRequestOf(request.raw);
  if (!p) throw new ProblemError('not-found', `Route ${request.method}:${request.url} not found`);
  if (!p.address)
    throw new ProblemError('not-found', `${p.host} names no preview ({port}-{session}--{namespace})`);
  return p as PreviewRequest & { address: PreviewAddress };
}

/** Registers the preview origins' routes (see the module comment). */
export function previewProxyRoutes(app: FastifyInstance, o: PreviewProxyOptions): void {
  const pools = new PortUpstreams(app.config.portProxy);
  app.addHook('onClose', (_i, done) => {
    pools.close();
    done();
  });
  const name = cookieName(o.preview.scheme);
  const admitted = new WeakMap<FastifyRequest, Admitted>();
  const upstreams = new WeakMap<FastifyRequest, WebSocket>();
  const nowSeconds = (): number => Math.floor(o.now() / 1000);

  /** The session as it is now must be the one the token names, ready, on the Agent transport. */
  const admit = async (
    request: FastifyRequest,
    p: PreviewRequest & { address: PreviewAddress },
    claims: PreviewClaims,
  ): Promise<Admitted> => {
    checkPreviewPort(p.address.port, app.config);
    const target = await app.execs.resolveTarget(
      p.address.namespace,
      p.address.session,
      0,
      traceOption(request),
    );
    if (target.uid !== claims.uid) {
      throw unauthorized(
        `the preview link was made for an earlier session ${p.address.session}, since deleted`,
      );
    }
    if (target.transport !== 'Agent') {
      throw new ProblemError(
        'not-supported',
        `session ${target.name} uses execTransport ${target.transport}: previews need the Agent transport`,
      );
    }
    const podIP = app.interactive?.podIP(target) ?? target.podIP;
    app.activity.touch(request.traceContext ? { ...target, trace: request.traceContext } : target);
    return { address: p.address, claims, podIP, url: p.url };
  };

  const exchangeLink = async (
    request: FastifyRequest,
    reply: FastifyReply,
    p: PreviewRequest & { address: PreviewAddress },
  ): Promise<void> => {
    const token = new URLSearchParams(p.url.slice(p.url.indexOf('?') + 1)).get('token');
    const claims = authorize(token ? [token] : [], p.address, {
      tokens: o.tokens,
      nowSeconds: nowSeconds(),
      what: 'link',
    });
    await admit(request, p, claims);
    request.log.info(
      { keyId: claims.keyId, namespace: claims.namespace, session: claims.session, port: claims.port },
      'preview opened',
    );
    void reply
      .code(303)
      .header(
        'set-cookie',
        setCookie(token!, { scheme: o.preview.scheme, maxAgeSeconds: claims.exp - nowSeconds() }),
      )
      .header('location', '/')
      .header('cache-control', 'no-store')
      .header('referrer-policy', 'no-referrer')
      .send();
  };

  const preHandler = async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | void> => {
    const p = previewOf(request);
    const path = p.url.split('?', 1)[0];
    if (path === PREVIEW_AUTH_PATH && request.method === 'GET' && !request.ws) {
      await exchangeLink(request, reply, p);
      return reply;
    }
    if (request.ws) checkOrigin(request, []);
    const tokens = cookieValues(request.headers.cookie, name);
    const claims = authorize(tokens, p.address, {
      tokens: o.tokens,
      nowSeconds: nowSeconds(),
      what: 'cookie',
    });
    const a = await admit(request, p, claims);
    // The preview cookie stays in the gateway; the origin's other cookies are the sandbox's own.
    const rest = withoutCookie(request.headers.cookie, name);
    if (rest === undefined) delete request.raw.headers.cookie;
    else request.raw.headers.cookie = rest;
    admitted.set(request, a);
    if (request.ws) await dialUpstream(request, a);
  };

  const dialUpstream = async (request: FastifyRequest, a: Admitted): Promise<void> => {
    const host = a.podIP.includes(':') ? `[${a.podIP}]` : a.podIP;
    const protocols = String(request.headers['sec-websocket-protocol'] ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    const release = pools.acquireWebSocket(a.claims.keyId);
    try {
      const upstream = await dialWebSocket(`ws://${host}:${a.address.port}${a.url}`, {
        protocols,
        timeoutMs: app.config.exec.connectTimeoutMs + 10_000,
        maxPayload: WS_MAX_MESSAGE_BYTES,
      });
      upstream.once('close', release);
      upstreams.set(request, upstream);
      request.raw.socket.once('close', () => {
        if (upstreams.get(request) === upstream) upstream.close(1001, 'client left');
      });
    } catch (err) {
      release();
      const detail =
        err instanceof UpgradeRefusedError
          ? `the server on port ${a.address.port} answered the upgrade with HTTP ${err.status}`
          : `port ${a.address.port} of the sandbox could not be reached`;
      throw new ProblemError('upstream-error', detail, { cause: err });
    }
  };

  const handler = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const a = admitted.get(request);
    if (!a) return; // the link's exchange answered in preHandler
    reply.hijack();
    try {
      await proxyToPort(request.raw, reply.raw, {
        podIP: a.podIP,
        port: a.address.port,
        path: a.url,
        prefix: '',
        connectTimeoutMs: app.config.exec.connectTimeoutMs,
        timeoutMs: PORT_PROXY_TIMEOUT_MS,
        maxBodyBytes: app.config.maxFileBytes,
        agent: pools.poolFor(a.claims.keyId),
        forwardCookies: true,
      });
    } catch (err) {
      const problem =
        err instanceof ProblemError ? err : new ProblemError('internal', undefined, { cause: err });
      request.log.warn(
        { session: a.address.session, port: a.address.port, slug: problem.slug, detail: problem.detail },
        'preview request failed',
      );
      if (reply.raw.headersSent) return void reply.raw.destroy();
      reply.raw.writeHead(problem.status, { 'content-type': 'application/problem+json' });
      reply.raw.end(JSON.stringify(problem.toBody()));
    }
  };

  const wsHandler = (socket: WebSocket, request: FastifyRequest): void => {
    const upstream = upstreams.get(request);
    upstreams.delete(request);
    if (!upstream) return void socket.close(1011, 'no upstream');
    bridgeSockets(socket, upstream, { maxBufferedBytes: WS_MAX_BUFFERED_BYTES });
  };

  // The body is the sandbox's business: passed through as a stream whatever its type.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_req, payload, next) => next(null, payload));
  // Public: the cookie, not an API key, admits these (and they stay out of the OpenAPI document).
  const config = { public: true };
  app.route({
    method: 'GET',
    url: PREVIEW_ROUTE,
    config,
    exposeHeadRoute: false,
    preHandler,
    handler,
    wsHandler,
  });
  app.route({
    method: ['POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'],
    url: PREVIEW_ROUTE,
    config,
    preHandler,
    handler,
  });
}
