/**
 * The Origin check of every WebSocket upgrade (terminal, port route), before anything is dialed
 * (issue 25). A browser sends Origin on every WebSocket handshake and lets any page open one to
 * any host: without the check, a page on another site could reach a terminal or a sandbox port
 * with whatever credentials the browser adds. Allowed: no Origin (not a browser: SDKs, the CLI,
 * curl), the gateway's own origin (the Origin's host is the request's Host), and the origins of
 * GATEWAY_ALLOWED_ORIGINS. Anything else, `Origin: null` included, is 403 origin-forbidden.
 */
import type { FastifyRequest } from 'fastify';

import { ProblemError } from '../errors.js';

/** Ports a browser leaves out of Host for each scheme. */
const DEFAULT_PORTS: Readonly<Record<string, string>> = { 'http:': '80', 'https:': '443' };

/** True when an upgrade with this Origin may proceed (see the module comment). */
export function originAllowed(
  origin: string | undefined,
  host: string | undefined,
  allowed: readonly string[],
): boolean {
  if (origin === undefined) return true;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  if (url.origin === 'null') return false;
  if (allowed.includes(url.origin)) return true;
  if (host === undefined) return false;
  const wanted = host.toLowerCase();
  const explicit = `${url.hostname}:${url.port || DEFAULT_PORTS[url.protocol] || ''}`;
  return wanted === url.host || wanted === explicit;
}

/** Throws origin-forbidden (403) when the upgrade's Origin is not allowed. */
export function checkOrigin(request: FastifyRequest, allowed: readonly string[]): void {
  const origin = request.headers.origin;
  if (!originAllowed(typeof origin === 'string' ? origin : undefined, request.headers.host, allowed)) {
    throw new ProblemError(
      'origin-forbidden',
      `WebSocket upgrades from origin ${JSON.stringify(String(origin).slice(0, 200))} are not allowed: use the gateway's own origin or one of GATEWAY_ALLOWED_ORIGINS`,
    );
  }
}
