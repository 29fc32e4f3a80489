/**
 * The operator's HTTP endpoints, one server per port: the probes, /healthz (liveness: the process
 * and its event loop answer) and /readyz (readiness, see Supervisor.isReady), on HTTP_PORT; and
 * /metrics (Prometheus text) on METRICS_PORT, so a scrape policy or a NetworkPolicy can open one
 * without the other. Plain node:http: read-only routes need no framework.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

import type { Registry } from 'prom-client';

import type { Logger } from './log-port.js';
import { errorFields } from './logger.js';

/** What the endpoint needs; it serves the probes when given isReady, /metrics when given a registry. */
export interface HttpServerOptions {
  readonly port: number;
  readonly host?: string;
  readonly registry?: Registry;
  /** Readiness: see the caller's definition. */
  readonly isReady?: () => boolean;
  readonly logger: Logger;
}

/** Starts listening; resolves once bound. */
export async function startHttpServer(opts: HttpServerOptions): Promise<Server> {
  const server = createServer((req, res) => {
    handle(req, res, opts).catch((err: unknown) => {
      opts.logger.error('http handler failed', { path: req.url, ...errorFields(err) });
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  server.keepAliveTimeout = 5_000;
  server.requestTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host ?? '0.0.0.0', () => {
      server.off('error', reject);
      resolve();
    });
  });
  return server;
}

/** Closes the server (idle keep-alive connections included). */
export async function stopHttpServer(server: Server): Promise<void> {
  server.closeIdleConnections();
  await new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
}

async function handle(req: IncomingMessage, res: ServerResponse, opts: HttpServerOptions): Promise<void> {
  const path = (req.url ?? '/').split('?')[0];
  if (req.method !== 'GET' && req.method !== 'HEAD') return text(res, 405, 'method not allowed\n');
  const { isReady, registry } = opts;
  if (isReady && path === '/healthz') return text(res, 200, 'ok\n');
  if (isReady && path === '/readyz')
    return isReady() ? text(res, 200, 'ok\n') : text(res, 503, 'not ready\n');
  if (registry && path === '/metrics') {
    const body = await registry.metrics();
    res.writeHead(200, { 'content-type': registry.contentType });
    res.end(body);
    return;
  }
  return text(res, 404, 'not found\n');
}

function text(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' });
  res.end(body);
}
