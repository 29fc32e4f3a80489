/**
 * `/v1/sessions/{name}/ports/{port}/...`: HTTP and WebSocket requests to a server in a sandbox (a
 * dev server, a notebook, a preview of an app), through the gateway with the same API-key auth and
 * tenant checks as every route. The rest of the path and the query go to `<pod IP>:<port>` as
 * they were received (percent-encoding kept: `%2F` stays an escaped slash); the session's
 * namespace is the key's default or the `X-Sandbox-Namespace` header (the query belongs to the
 * sandbox's server). Only ports in GATEWAY_PROXY_PORT_MIN..MAX are proxied (the chart's
 * NetworkPolicy admits the gateway on exactly that range), never the agent's, and only for
 * sessions on the Agent transport (KubernetesExec: 501). The API key, hop-by-hop headers and, by
 * default, cookies are never forwarded; a GET or HEAD with a body is refused (exec/relay/port-proxy.ts);
 * answers stream back with backpressure, bounded in time. Upstream connections come from the
 * caller's API key's own pool, with an idle timeout (exec/relay/port-upstreams.ts). WebSocket upgrades
 * are checked for their Origin (routes/ws-origin.ts) and bridged message by message with bounded
 * buffers (exec/relay/ws-bridge.ts).
 *
 * Browsers cannot send the Authorization header on navigation or WebSocket: they open a sandbox
 * port as a preview on an origin of its own instead (preview/, ADR 0032).
 */
import type {} from '@fastify/websocket';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type WebSocket from 'ws';

import { ProblemError } from '../../errors.js';
import { NAMESPACE_HEADER, proxyToPort, refuseBodyOnBodylessMethod } from '../../exec/relay/port-proxy.js';
import { PortUpstreams } from '../../exec/relay/port-upstreams.js';
import { UpgradeRefusedError, dialWebSocket } from '../../exec/relay/ws-dial.js';
import { bridgeSockets } from '../../exec/relay/ws-bridge.js';
import { resolveNamespace } from '../../service/namespaces.js';
import type { ExecTarget } from '../../sessions/model.js';
import { traceOption } from '../../tracing/request-trace.js';
import { dnsLabel, problemResponses } from '../common-schemas.js';
import { checkOrigin } from '../ws-origin.js';

type PortRoute = { Params: { name: string; port: string; '*'?: string } };

/** Deadline of a proxied HTTP exchange (request and whole answer). */
export const PORT_PROXY_TIMEOUT_MS = 300_000;
/** Bytes waiting for one side of a proxied WebSocket before the other side is paused. */
const WS_MAX_BUFFERED_BYTES = 1024 * 1024;
/** Largest WebSocket message relayed from the sandbox (the gateway's own limit from callers too). */
const WS_MAX_MESSAGE_BYTES = 1024 * 1024;

const PORT = /^[0-9]{1,5}$/;
/** Path segments of the route before the sandbox's path: '', v1, sessions, name, ports, port. */
const PREFIX_SEGMENTS = 6;

/**
 * The path and query for the sandbox's server, from the URL as received (never the router's
 * decoded parameter: `%2F`, `%3F` or `%25` must keep their meaning).
 */
export function rawUpstreamPath(rawUrl: string): string {
  const q = rawUrl.indexOf('?');
  const path = q >= 0 ? rawUrl.slice(0, q) : rawUrl;
  const query = q >= 0 ? rawUrl.slice(q) : '';
  let at = -1;
  for (let i = 0; i < PREFIX_SEGMENTS; i++) {
    at = path.indexOf('/', at + 1);
    if (at < 0) return `/${query}`;
  }
  return `${path.slice(at)}${query}`;
}

const schema = {
  summary: 'HTTP or WebSocket request to a port of the session (proxied to the server listening there)',
  description:
    'The rest of the path and the query go to the server as they are. The namespace is the API key default, or the X-Sandbox-Namespace header. ' +
    'The Authorization header is never forwarded.',
  tags: ['ports'],
  params: {
    type: 'object',
    required: ['name', 'port'],
    properties: {
      name: { ...dnsLabel, description: 'Session name' },
      port: { type: 'string', maxLength: 8, description: 'Port of the sandbox (in the allowed range)' },
      '*': { type: 'string', description: 'Path for the server' },
    },
  },
  response: problemResponses(404, 410, 413, 429, 501, 502, 503, 504),
} as const;

export default function portRoutes(app: FastifyInstance, _opts: unknown, done: (err?: Error) => void): void {
  const { min, max } = app.config.proxyPorts;
  // Kept-alive connections to sandbox servers, one pool per API key; a reuse that races the
  // server's close is retried once for bodyless requests (exec/relay/port-proxy.ts).
  const upstreamPools = new PortUpstreams(app.config.portProxy);
  app.addHook('onClose', (_i, hookDone) => {
    upstreamPools.close();
    hookDone();
  });
  /** Targets resolved in preHandler, for the handler. */
  const targets = new WeakMap<
    FastifyRequest,
    { target: ExecTarget; port: number; podIP: string; refusedRetryUntil?: number }
  >();
  const upstreams = new WeakMap<FastifyRequest, WebSocket>();

  // The body is the sandbox's business: passed through as a stream whatever its type.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_req, payload, next) => next(null, payload));

  const portOf = (raw: string): number => {
    const port = PORT.test(raw) ? Number(raw) : NaN;
    if (!(port >= 1 && port <= 65535)) {
      throw new ProblemError(
        'invalid-request',
        `port must be an integer from 1 to 65535; got ${JSON.stringify(raw.slice(0, 8))}`,
      );
    }
    if (port === app.config.agentPort || port < min || port > max) {
      throw new ProblemError(
        'port-forbidden',
        `port ${port} is not proxied: allowed are ${min} to ${max}, not the agent port ${app.config.agentPort}`,
      );
    }
    return port;
  };

  /** Path and query for the sandbox's server. */
  const upstreamPath = (request: FastifyRequest<PortRoute>): string =>
    rawUpstreamPath(request.raw.url ?? '/');
  const prefix = (request: FastifyRequest<PortRoute>): string =>
    `/v1/sessions/${request.params.name}/ports/${request.params.port}`;

  const resolve = async (request: FastifyRequest<PortRoute>): Promise<void> => {
    const header = request.headers[NAMESPACE_HEADER];
    const namespace = resolveNamespace(request.principal, typeof header === 'string' ? header : undefined);
    const port = portOf(request.params.port);
    if (request.ws) checkOrigin(request, app.config.allowedOrigins);
    else refuseBodyOnBodylessMethod(request.method, request.headers);
    // No wait for a starting session; one this request wakes from suspension is waited for
    // (wake on traffic, issue 27: a preview or dev server comes back on its first request).
    let woke = false;
    const target = await app.execs.resolveTarget(namespace, request.params.name, 0, {
      ...traceOption(request),
      wake: true,
      onResume: () => (woke = true),
    });
    if (target.transport !== 'Agent') {
      throw new ProblemError(
        'not-supported',
        `session ${target.name} uses execTransport ${target.transport}: ports need the Agent transport`,
      );
    }
    const podIP = app.interactive?.podIP(target) ?? target.podIP;
    // A request that woke the session gives its startup command the wait budget to start listening.
    const refusedRetryUntil = woke ? Date.now() + app.config.exec.defaultWaitSeconds * 1000 : undefined;
    targets.set(request, { target, port, podIP, refusedRetryUntil });
    app.activity.touch(request.traceContext ? { ...target, trace: request.traceContext } : target);
  };

  const proxyHttp = async (request: FastifyRequest<PortRoute>, reply: FastifyReply): Promise<void> => {
    const t = targets.get(request)!;
    // Answered before the hijack (413, unreachable): a problem; after, the connection is cut.
    const declared = request.headers['content-length'];
    if (declared !== undefined && Number(declared) > app.config.maxFileBytes) {
      throw new ProblemError(
        'payload-too-large',
        `the request body is ${declared} bytes; the limit is ${app.config.maxFileBytes}`,
      );
    }
    reply.hijack();
    try {
      await proxyToPort(request.raw, reply.raw, {
        podIP: t.podIP,
        port: t.port,
        path: upstreamPath(request),
        prefix: prefix(request),
        connectTimeoutMs: app.config.exec.connectTimeoutMs,
        timeoutMs: PORT_PROXY_TIMEOUT_MS,
        maxBodyBytes: app.config.maxFileBytes,
        agent: upstreamPools.poolFor(request.principal.keyId),
        forwardCookies: app.config.portProxy.forwardCookies,
        refusedRetryUntil: t.refusedRetryUntil,
      });
    } catch (err) {
      const problem =
        err instanceof ProblemError ? err : new ProblemError('internal', undefined, { cause: err });
      request.log.warn(
        { session: request.params.name, port: t.port, slug: problem.slug, detail: problem.detail },
        'port request failed',
      );
      if (reply.raw.headersSent) return void reply.raw.destroy();
      if (problem.retryAfterSeconds !== undefined)
        reply.raw.setHeader('retry-after', String(problem.retryAfterSeconds));
      reply.raw.writeHead(problem.status, { 'content-type': 'application/problem+json' });
      reply.raw.end(JSON.stringify(problem.toBody()));
    }
  };

  const dialUpstream = async (request: FastifyRequest<PortRoute>): Promise<void> => {
    if (!request.ws) return;
    const t = targets.get(request)!;
    const host = t.podIP.includes(':') ? `[${t.podIP}]` : t.podIP;
    const protocols = String(request.headers['sec-websocket-protocol'] ?? '')
      .split(',')
      .map((p) => p.trim())
      .filter(Boolean);
    // One of the key's WebSocket places, given back when the upstream socket closes.
    const release = upstreamPools.acquireWebSocket(request.principal.keyId);
    try {
      const upstream = await dialWebSocket(`ws://${host}:${t.port}${upstreamPath(request)}`, {
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
      if (err instanceof UpgradeRefusedError) {
        throw new ProblemError(
          'upstream-error',
          `the server on port ${t.port} answered the upgrade with HTTP ${err.status}`,
        );
      }
      throw new ProblemError('upstream-error', `port ${t.port} of the sandbox could not be reached`, {
        cause: err,
      });
    }
  };

  const preHandler = async (request: FastifyRequest<PortRoute>): Promise<void> => {
    await resolve(request);
    await dialUpstream(request);
  };

  const wsHandler = (socket: WebSocket, request: FastifyRequest<PortRoute>): void => {
    const upstream = upstreams.get(request);
    upstreams.delete(request);
    if (!upstream) return void socket.close(1011, 'no upstream');
    bridgeSockets(socket, upstream, { maxBufferedBytes: WS_MAX_BUFFERED_BYTES });
  };

  for (const url of ['/v1/sessions/:name/ports/:port', '/v1/sessions/:name/ports/:port/*']) {
    app.route<PortRoute>({
      method: 'GET',
      url,
      schema,
      exposeHeadRoute: false,
      preHandler,
      handler: proxyHttp,
      wsHandler,
    });
    app.route<PortRoute>({
      method: ['POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'],
      url,
      schema,
      preHandler,
      handler: proxyHttp,
    });
  }
  done();
}
