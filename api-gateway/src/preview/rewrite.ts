/**
 * Preview routing (ADR 0032): every request whose Host is under the preview domain is rewritten,
 * before fastify routes it, to one internal path served by the preview routes (proxy.ts). Thus
 * nothing on a preview origin, whatever its path, reaches the API, the console or any other route:
 * a sandbox's pages share no origin with them. The request's own URL and what its Host names are
 * kept beside the raw request. A request for the internal path on any other host is not a preview
 * (404).
 */
import type { IncomingMessage } from 'node:http';

import { classifyHost, type PreviewAddress } from './host.js';

/** The internal path preview requests are routed to (fastify's rewriteUrl). */
export const PREVIEW_ROUTE = '/__sandbox-preview/';

/** A request on a preview host. */
export interface PreviewRequest {
  /** What the Host names; undefined when it names no preview (404). */
  address: PreviewAddress | undefined;
  /** The Host as received, lower case (for messages). */
  host: string;
  /** The request's path and query as received, for the sandbox's server. */
  url: string;
}

const marks = new WeakMap<IncomingMessage, PreviewRequest>();

/** fastify's rewriteUrl for a preview domain (see the module comment). */
export function previewRewrite(domain: string): (req: IncomingMessage) => string {
  return (req) => {
    const url = req.url ?? '/';
    const kind = classifyHost(req.headers.host, domain);
    if (kind.kind === 'other') return url;
    marks.set(req, {
      address: kind.kind === 'preview' ? kind.address : undefined,
      host: kind.kind === 'preview' ? String(req.headers.host).toLowerCase() : kind.host,
      url: url.startsWith('/') ? url : '/',
    });
    return PREVIEW_ROUTE;
  };
}

/** The preview a raw request was routed as, if it was. */
export function previewRequestOf(req: IncomingMessage): PreviewRequest | undefined {
  return marks.get(req);
}
