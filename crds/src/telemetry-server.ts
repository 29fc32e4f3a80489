/**
 * The small HTTP server the operator and the gateway both run for their operational endpoints, one
 * server per port: the probes (/healthz: the process and its event loop answer; /readyz: the
 * caller's readiness) and /metrics (Prometheus text). /metrics lives on a port of its own (ADR 0011),
 * so a scrape policy or a NetworkPolicy can open it without the API or the probes, and a scrape
 * never goes through the gateway's API stack (auth, limits, tracing). Plain node:http: read-only
 * routes need no framework. No authentication: the port is meant for the cluster's scrapers only
 * (the chart's NetworkPolicies say which peers reach it).
 *
 * Bounded: GET and HEAD only (no request body is read), headers within 5 s, the whole request
 * within 10 s, idle keep-alive connections closed after 5 s, at most 64 connections at once.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

/** The part of a prom-client Registry the server reads (no dependency on prom-client here). */
export interface MetricsSource {
  metrics(): Promise<string>;
  readonly contentType: string;
}

/** What the server serves: the probes when given isReady, /metrics when given metrics. */
export interface TelemetryServerOptions {
  readonly port: number;
  readonly host?: string;
  readonly metrics?: MetricsSource;
  /** Readiness as the caller defines it; with it the server answers /healthz and /readyz. */
  readonly isReady?: () => boolean;
  /** Told about a handler that failed (the answer is then 500): the caller logs it, once. */
  readonly onError: (path: string, err: unknown) => void;
}

/** Connections served at once; a scraper and the kubelet need a handful. */
const MAX_CONNECTIONS = 64;

/** Starts listening; resolves once bound (read the port from `server.address()` when given 0). */
export async function startTelemetryServer(opts: TelemetryServerOptions): Promise<Server> {
  const server = createServer((req, res) => {
    handle(req, res, opts).catch((err: unknown) => {
      opts.onError(pathOf(req), err);
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  server.keepAliveTimeout = 5_000;
  server.headersTimeout = 5_000;
  server.requestTimeout = 10_000;
  server.maxConnections = MAX_CONNECTIONS;
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
export async function stopTelemetryServer(server: Server): Promise<void> {
  server.closeIdleConnections();
  await new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
}

/** The port a server listens on (the bound one when it was started on port 0). */
export function boundPort(server: Server, configured: number): number {
  const address = server.address();
  return typeof address === 'object' && address ? address.port : configured;
}

function pathOf(req: IncomingMessage): string {
  return (req.url ?? '/').split('?')[0] ?? '/';
}

async function handle(
  req: IncomingMessage,
  res: ServerResponse,
  opts: TelemetryServerOptions,
): Promise<void> {
  const path = pathOf(req);
  if (req.method !== 'GET' && req.method !== 'HEAD') return text(res, 405, 'method not allowed\n');
  const { isReady, metrics } = opts;
  if (isReady && path === '/healthz') return text(res, 200, 'ok\n');
  if (isReady && path === '/readyz')
    return isReady() ? text(res, 200, 'ok\n') : text(res, 503, 'not ready\n');
  if (metrics && path === '/metrics') {
    const body = await metrics.metrics();
    res.writeHead(200, { 'content-type': metrics.contentType });
    res.end(body);
    return;
  }
  return text(res, 404, 'not found\n');
}

function text(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' });
  res.end(body);
}
