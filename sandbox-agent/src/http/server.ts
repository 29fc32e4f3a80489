/**
 * The agent's HTTP server on node:http (no framework: the agent is bundled into one small file).
 * Routing, auth, timeouts and the single error-to-problem mapping live here; the handlers are in
 * exec-routes.ts and file-routes.ts.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Duplex } from 'node:stream';

import { AGENT_PATHS, ptyQuerySchema } from '@sandbox-platform/api';

import {
  getArchiveRoute,
  getDigestRoute,
  postDigestRoute,
  putArchiveRoute,
  type ArchiveLock,
} from '../archive/archive-routes.js';
import type { CodeContexts } from '../code/contexts.js';
import { codeRoute, matchCodePath } from '../code/code-routes.js';
import type { FileStore } from '../files/file-store.js';
import type { Watches } from '../watch/watch-route.js';
import type { ProcessTable } from '../processes/process-table.js';
import type { Terminals } from '../pty/terminals.js';
import { errorMessage, type Logger } from '../log.js';
import { ExecCancelledError, ShellUnavailableError } from '../shell/persistent-shell.js';
import { currentToken, getBindRoute, postBindRoute } from '../bind/bind-routes.js';
import type { BindState } from '../bind/bind-state.js';
import { isAuthorized } from './auth.js';
import type { Liveness } from './liveness.js';
import { ByteBudget } from './byte-budget.js';
import { type CommandRunner, execRoute, execStreamRoute, type ExecRouteOptions } from './exec-routes.js';
import { FILES_PREFIX, getFileRoute, putFileRoute } from './file-routes.js';
import { matchProcessPath, processRoute } from './process-routes.js';
import { HttpProblem, problemResponseText, sendJson, sendProblem } from './problem.js';
import { validatedQuery, VALIDATORS } from './validate.js';
import { requestLogger } from '../tracing/trace-log.js';

/** What the server needs; built by the composition root (agent.ts). */
export interface ServerDeps {
  token: string;
  /** A warm Pod's bind state: its bound token replaces `token` (docs/adr/0016-warm-pools.md). */
  bind?: BindState;
  runner: CommandRunner;
  /** True when the shell is alive (the token is loaded by construction). */
  healthy: () => boolean;
  /** The liveness check of /livez (see liveness.ts). */
  liveness: { check(): Promise<Liveness> };
  files: FileStore;
  processes: ProcessTable;
  terminals: Terminals;
  /** Code contexts (docs/adr/0033); absent in embedders that do not run kernels. */
  code?: CodeContexts;
  /** The archive calls' lock (docs/snapshots.md); absent in embedders without archive routes. */
  archive?: ArchiveLock;
  /** File watches (docs/adr/0033); absent in embedders that do not watch. */
  watches?: Watches;
  limits: {
    execBodyMaxBytes: number;
    fileMaxBytes: number;
    maxConnections: number;
    stdinMaxBytes: number;
  };
  timeouts: { requestTimeoutMs: number; headersTimeoutMs: number; keepAliveTimeoutMs: number };
  logger: Logger;
}

/** Period of Node's request and headers timeout checks. */
const CONNECTION_CHECK_MS = 1000;

/** Largest unread request body drained (so the client can read the error) rather than cut off. */
const MAX_DRAIN_BYTES = 256 * 1024 * 1024;

/** Calls waiting for the shell hold at most this many times the stdin limit of one call. */
const QUEUED_STDIN_FACTOR = 8;

/** What routes get: the server's deps and what the server derives from them once. */
interface RouteDeps extends ServerDeps {
  exec: ExecRouteOptions;
}

type Handler = (req: IncomingMessage, res: ServerResponse, deps: RouteDeps) => Promise<void>;

interface Route {
  name: string;
  /** The method, or undefined for a path that takes several (the handler dispatches). */
  method?: string;
  matches: (path: string) => boolean;
  handler: Handler;
  auth: boolean;
}

const ROUTES: readonly Route[] = [
  { name: 'healthz', method: 'GET', matches: (p) => p === '/healthz', handler: health, auth: false },
  { name: 'livez', method: 'GET', matches: (p) => p === '/livez', handler: live, auth: false },
  // Signed, not bearer-authenticated: the signature is the credential (bind-state.ts).
  {
    name: 'bind',
    method: 'POST',
    matches: (p) => p === '/v1/bind',
    handler: (req, res, d) => postBindRoute(req, res, d.bind),
    auth: false,
  },
  {
    name: 'bind-status',
    method: 'GET',
    matches: (p) => p === '/v1/bind',
    handler: (req, res, d) => getBindRoute(req, res, d.bind),
    auth: true,
  },
  {
    name: 'exec',
    method: 'POST',
    matches: (p) => p === '/v1/exec',
    handler: (req, res, d) => execRoute(req, res, d.runner, d.exec),
    auth: true,
  },
  {
    name: 'exec-stream',
    method: 'POST',
    matches: (p) => p === '/v1/exec/stream',
    handler: (req, res, d) => execStreamRoute(req, res, d.runner, d.exec),
    auth: true,
  },
  {
    name: 'files-put',
    method: 'PUT',
    matches: (p) => p.startsWith(FILES_PREFIX),
    handler: (req, res, d) => putFileRoute(req, res, d.files, d.limits.fileMaxBytes),
    auth: true,
  },
  {
    name: 'files-get',
    method: 'GET',
    matches: (p) => p.startsWith(FILES_PREFIX),
    handler: (req, res, d) => getFileRoute(req, res, d.files),
    auth: true,
  },
  {
    name: 'processes',
    matches: (p) => p === AGENT_PATHS.processes || p.startsWith(`${AGENT_PATHS.processes}/`),
    handler: (req, res, d) => {
      const at = matchProcessPath(pathOf(req));
      if (!at) throw new HttpProblem('not-found', `no route for ${req.method} ${pathOf(req)}`);
      const deps = { processes: d.processes, bodyLimit: d.limits.execBodyMaxBytes, logger: d.logger };
      return processRoute(req, res, deps, at);
    },
    auth: true,
  },
  {
    name: 'code',
    matches: (p) => p === AGENT_PATHS.code || p.startsWith(`${AGENT_PATHS.code}/`),
    handler: (req, res, d) => {
      const at = matchCodePath(pathOf(req));
      if (!at || !d.code) throw new HttpProblem('not-found', `no route for ${req.method} ${pathOf(req)}`);
      return codeRoute(req, res, { contexts: d.code, logger: d.logger }, at);
    },
    auth: true,
  },
  {
    name: 'watch',
    method: 'GET',
    matches: (p) => p === AGENT_PATHS.watch,
    handler: (req, res, d) => {
      if (!d.watches) throw new HttpProblem('not-found', `no route for ${req.method} ${pathOf(req)}`);
      return d.watches.serve(req, res);
    },
    auth: true,
  },
  {
    name: 'archive-digest',
    method: 'GET',
    matches: (p) => p === AGENT_PATHS.archiveDigest,
    handler: (req, res, d) => getDigestRoute(req, res, archiveDeps(d)),
    auth: true,
  },
  {
    name: 'archive-digest-post',
    method: 'POST',
    matches: (p) => p === AGENT_PATHS.archiveDigest,
    handler: (req, res, d) => postDigestRoute(req, res, archiveDeps(d)),
    auth: true,
  },
  {
    name: 'archive-get',
    method: 'GET',
    matches: (p) => p === AGENT_PATHS.archive,
    handler: (req, res, d) => getArchiveRoute(req, res, archiveDeps(d)),
    auth: true,
  },
  {
    name: 'archive-put',
    method: 'PUT',
    matches: (p) => p === AGENT_PATHS.archive,
    handler: (req, res, d) => putArchiveRoute(req, res, archiveDeps(d)),
    auth: true,
  },
  {
    name: 'pty',
    method: 'GET',
    matches: (p) => p === AGENT_PATHS.pty,
    handler: () => {
      throw new HttpProblem('upgrade-required', 'GET /v1/pty needs a WebSocket upgrade (Upgrade: websocket)');
    },
    auth: true,
  },
];

/** Creates (does not start) the agent's HTTP server. */
export function createAgentServer(serverDeps: ServerDeps): Server {
  const deps: RouteDeps = {
    ...serverDeps,
    exec: {
      bodyLimit: serverDeps.limits.execBodyMaxBytes,
      stdinMaxBytes: serverDeps.limits.stdinMaxBytes,
      stdinBudget: new ByteBudget(serverDeps.limits.stdinMaxBytes * QUEUED_STDIN_FACTOR),
    },
  };
  const server = createServer(
    {
      requestTimeout: deps.timeouts.requestTimeoutMs,
      headersTimeout: deps.timeouts.headersTimeoutMs,
      keepAliveTimeout: deps.timeouts.keepAliveTimeoutMs,
      // How often Node enforces the two timeouts above (default 30 s, too coarse for headers).
      connectionsCheckingInterval: CONNECTION_CHECK_MS,
    },
    (req, res) => void serve(req, res, deps),
  );
  server.maxConnections = deps.limits.maxConnections;
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) =>
    upgrade(req, socket, head, deps),
  );
  return server;
}

/** The archive routes' deps (404 in an embedder without them). */
function archiveDeps(d: RouteDeps): { workspace: string; lock: ArchiveLock; logger: Logger } {
  if (!d.archive) throw new HttpProblem('not-found', 'no archive routes in this agent');
  return { workspace: d.files.workspace, lock: d.archive, logger: d.logger };
}

function pathOf(req: IncomingMessage): string {
  return (req.url ?? '/').split('?')[0] ?? '/';
}

async function serve(req: IncomingMessage, res: ServerResponse, serverDeps: RouteDeps): Promise<void> {
  const started = performance.now();
  const path = pathOf(req);
  const route = ROUTES.find((r) => (r.method === undefined || r.method === req.method) && r.matches(path));
  const deps = tracedDeps(serverDeps, req);
  res.once('close', () => {
    deps.logger.debug('request', {
      method: req.method,
      route: route?.name ?? 'none',
      status: res.statusCode,
      durationMs: Math.round(performance.now() - started),
    });
  });
  try {
    if (route?.auth !== false && !isAuthorized(req, currentToken(deps))) {
      throw new HttpProblem('unauthorized', 'a valid bearer token is required');
    }
    if (!route) throw new HttpProblem('not-found', `no route for ${req.method} ${path}`);
    await route.handler(req, res, deps);
  } catch (err) {
    renderError(err, req, res, deps.logger);
  }
}

/** The request's deps: with a traced request's logger (trace ids on its lines), else as they are. */
function tracedDeps(deps: RouteDeps, req: IncomingMessage): RouteDeps {
  const logger = requestLogger(deps.logger, req);
  return logger === deps.logger ? deps : { ...deps, logger, exec: { ...deps.exec, logger } };
}

/**
 * A WebSocket upgrade: only `GET /v1/pty`, with the token, a valid query and a free terminal;
 * anything else is answered with a problem on the raw socket, which is then closed.
 */
function upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, serverDeps: RouteDeps): void {
  const started = performance.now();
  const deps = tracedDeps(serverDeps, req);
  socket.on('error', (err) => deps.logger.debug('upgrade socket error', { error: errorMessage(err) }));
  try {
    if (!isAuthorized(req, currentToken(deps)))
      throw new HttpProblem('unauthorized', 'a valid bearer token is required');
    const path = pathOf(req);
    if (req.method !== 'GET' || path !== AGENT_PATHS.pty) {
      throw new HttpProblem('not-found', `no WebSocket route for ${req.method} ${path}`);
    }
    const search = new URL(req.url ?? '/', 'http://agent').searchParams;
    const query = validatedQuery(VALIDATORS.ptyQuery, ptyQuerySchema, search);
    deps.terminals.upgrade(req, socket, head, { query, logger: deps.logger });
    deps.logger.debug('request', { method: 'GET', route: 'pty', status: 101 });
  } catch (err) {
    const problem =
      err instanceof HttpProblem ? err : new HttpProblem('internal', 'internal error, see the agent log');
    if (!(err instanceof HttpProblem)) deps.logger.error('upgrade failed', { error: errorMessage(err) });
    socket.end(problemResponseText(problem));
    deps.logger.debug('request', {
      method: req.method,
      route: 'upgrade',
      status: problem.status,
      durationMs: Math.round(performance.now() - started),
    });
  }
}

function health(_req: IncomingMessage, res: ServerResponse, deps: ServerDeps): Promise<void> {
  if (!deps.healthy())
    return Promise.reject(new HttpProblem('shell-unavailable', 'the shell is not running'));
  sendJson(res, 200, { status: 'ok' });
  return Promise.resolve();
}

async function live(_req: IncomingMessage, res: ServerResponse, deps: ServerDeps): Promise<void> {
  const verdict = await deps.liveness.check();
  if (!verdict.ok) {
    deps.logger.error('liveness check failed', { reason: verdict.reason });
    throw new HttpProblem('agent-stalled', verdict.reason);
  }
  sendJson(res, 200, { status: 'ok' });
}

/** The one place errors become responses; unexpected errors are logged here, once. */
function renderError(err: unknown, req: IncomingMessage, res: ServerResponse, logger: Logger): void {
  if (err instanceof ExecCancelledError) {
    res.destroy(); // the client is gone; there is nobody to answer
    return;
  }
  if (res.headersSent) {
    // A streamed response broke midway: cut the connection so the client sees an incomplete body.
    if (!(err instanceof HttpProblem))
      logger.warn('response failed after its headers', { error: errorMessage(err) });
    res.destroy();
    return;
  }
  let problem: HttpProblem;
  if (err instanceof HttpProblem) problem = err;
  else if (err instanceof ShellUnavailableError) problem = new HttpProblem('shell-unavailable', err.message);
  else {
    logger.error('request failed', { method: req.method, error: errorMessage(err) });
    problem = new HttpProblem('internal', 'internal error, see the agent log');
  }
  if (!req.complete) drainOrClose(req, res);
  if (problem.status === 503) res.setHeader('retry-after', '1');
  sendProblem(res, problem);
}

/**
 * A request answered before its body was read (413, 401, 400...): keep reading and discarding the
 * body so the client, which may still be writing, gets the answer and the connection stays usable
 * (the server's request timeout bounds the drain). A declared body too large to be worth
 * draining closes the connection instead.
 */
function drainOrClose(req: IncomingMessage, res: ServerResponse): void {
  if (Number(req.headers['content-length'] ?? 0) > MAX_DRAIN_BYTES) res.setHeader('connection', 'close');
  else req.resume();
}
