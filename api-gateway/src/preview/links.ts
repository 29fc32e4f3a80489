/**
 * POST /v1/sessions/{name}/previews: a signed, expiring link that opens a port of the session in
 * a browser, on the preview's own origin (ADR 0032). Authenticated like every API route: a key
 * gets links only for sessions of its own namespaces (another tenant's namespace is 403, as for
 * any call). The link's token is bound to the session's UID, so deleting the session revokes it.
 */
import type { FastifyInstance } from 'fastify';

import type { GatewayConfig } from '../config.js';
import { ProblemError } from '../errors.js';
import { dnsLabel, namespaceQuery, problemResponses } from '../routes/common-schemas.js';
import { resolveNamespace } from '../service/namespaces.js';
import { traceOption } from '../tracing/request-trace.js';
import { labelFor, previewOrigin } from './host.js';
import type { PreviewConfig } from './config.js';
import type { PreviewTokens } from './token.js';

/** Path of a preview origin that exchanges a link's token for the cookie. */
export const PREVIEW_AUTH_PATH = '/__sandbox_preview_auth';

/** What the route needs. */
export interface PreviewLinkOptions {
  preview: PreviewConfig | undefined;
  tokens: PreviewTokens | undefined;
  /** Now, in ms (tests pass a clock). */
  now: () => number;
}

type LinkRoute = {
  Params: { name: string };
  Querystring: { namespace?: string };
  Body: { port: number; ttlSeconds?: number };
};

/** A link as answered. */
export interface PreviewLink {
  url: string;
  origin: string;
  expiresAt: string;
  port: number;
  session: string;
  namespace: string;
}

const linkSchema = {
  type: 'object',
  required: ['url', 'origin', 'expiresAt', 'port', 'session', 'namespace'],
  additionalProperties: false,
  properties: {
    url: { type: 'string', description: 'Open this in a browser: it sets the preview cookie, then shows /' },
    origin: { type: 'string', description: "The preview's own origin" },
    expiresAt: { type: 'string', description: 'RFC 3339; the link and its cookie stop working then' },
    port: { type: 'integer' },
    session: { type: 'string' },
    namespace: { type: 'string' },
  },
} as const;

const linkRouteSchema = {
  summary: 'A signed, expiring browser link to a port of the session, on an origin of its own',
  tags: ['ports'],
  params: { type: 'object', required: ['name'], properties: { name: dnsLabel } },
  querystring: namespaceQuery,
  body: {
    type: 'object',
    required: ['port'],
    additionalProperties: false,
    properties: {
      port: { type: 'integer', minimum: 1, maximum: 65535 },
      ttlSeconds: { type: 'integer', minimum: 1, maximum: 86400 },
    },
  },
  response: { 201: linkSchema, ...problemResponses(404, 410, 501) },
} as const;

/** Throws port-forbidden (403) for a port the gateway does not proxy (as the port route). */
export function checkPreviewPort(port: number, config: GatewayConfig): void {
  const { min, max } = config.proxyPorts;
  if (port === config.agentPort || port < min || port > max) {
    throw new ProblemError(
      'port-forbidden',
      `port ${port} is not proxied: allowed are ${min} to ${max}, not the agent port ${config.agentPort}`,
    );
  }
}

/** Registers the route (previews off: 404 naming the setting). */
export function previewLinkRoutes(app: FastifyInstance, o: PreviewLinkOptions): void {
  app.post<LinkRoute>('/v1/sessions/:name/previews', { schema: linkRouteSchema }, async (request, reply) => {
    const namespace = resolveNamespace(request.principal, request.query.namespace);
    if (!o.preview || !o.tokens) {
      throw new ProblemError(
        'not-found',
        'previews are not configured on this gateway (GATEWAY_PREVIEW_DOMAIN)',
      );
    }
    const { port } = request.body;
    checkPreviewPort(port, app.config);
    const name = request.params.name;
    const view = await app.sessions.get(namespace, name, traceOption(request).trace);
    if (app.store.get(namespace, name)?.metadata.deletionTimestamp) {
      throw new ProblemError('session-gone', `session ${name} is being deleted`, {
        extensions: { reason: 'Terminating' },
      });
    }
    if (view.execTransport !== 'Agent') {
      throw new ProblemError(
        'not-supported',
        `session ${name} uses execTransport ${view.execTransport}: previews need the Agent transport`,
      );
    }
    const made = labelFor({ port, session: name, namespace });
    if ('error' in made) throw new ProblemError('invalid-request', made.error);
    const ttl = Math.min(request.body.ttlSeconds ?? o.preview.maxTtlSeconds, o.preview.maxTtlSeconds);
    const exp = Math.floor(o.now() / 1000) + ttl;
    const token = o.tokens.sign({
      namespace,
      session: name,
      uid: view.uid,
      port,
      keyId: request.principal.keyId,
      exp,
    });
    const origin = previewOrigin(made.label, o.preview);
    request.log.info(
      { keyId: request.principal.keyId, namespace, session: name, port, ttl },
      'preview link made',
    );
    const link: PreviewLink = {
      url: `${origin}${PREVIEW_AUTH_PATH}?token=${token}`,
      origin,
      expiresAt: new Date(exp * 1000).toISOString(),
      port,
      session: name,
      namespace,
    };
    return reply.code(201).send(link);
  });
}
