/**
 * HTTP to a port of a sandbox Pod (the port route): the caller's request streams to
 * `<pod IP>:<port>` and the answer streams back, both with backpressure. What crosses is filtered:
 * hop-by-hop headers (RFC 9110 7.6.1, plus whatever `Connection` names) are dropped both ways, and
 * the caller's credentials for the gateway (Authorization, the namespace header) never reach the
 * sandbox's server, nor do cookies either way unless the configuration forwards them (every
 * sandbox's port route shares the gateway's origin: one sandbox's cookie would reach the others).
 * A GET or HEAD with a body is refused (its body would be left on the upstream connection and
 * read as the next request). Time is bounded: a connect deadline, and a deadline for the whole
 * exchange (the sandbox is hostile: a server that never ends its answer is cut).
 */
import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { Transform, type TransformCallback } from 'node:stream';

import { ProblemError } from '../../errors.js';

/** Headers that describe one connection, not the message: never forwarded. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
]);

/** The gateway's own request headers: the API key and the namespace choice stay in the gateway. */
export const NAMESPACE_HEADER = 'x-sandbox-namespace';
const GATEWAY_ONLY = new Set(['authorization', NAMESPACE_HEADER]);
/** The same, plus the caller's cookies (cookies not forwarded). */
const GATEWAY_ONLY_AND_COOKIES = new Set([...GATEWAY_ONLY, 'cookie']);
/** Answer headers dropped when cookies are not forwarded. */
const SET_COOKIE = new Set(['set-cookie']);
/** Methods that take no body on the port route. */
const BODYLESS_METHODS = new Set(['GET', 'HEAD']);

/** True when the request announces a body (a non-zero length, or any transfer coding). */
export function announcesBody(headers: IncomingHttpHeaders): boolean {
  const length = headers['content-length'];
  return (length !== undefined && length !== '0') || headers['transfer-encoding'] !== undefined;
}

/** The invalid-request (400) problem of a GET or HEAD that announces a body, else undefined. */
function bodyOnBodylessMethod(
  method: string | undefined,
  headers: IncomingHttpHeaders,
): ProblemError | undefined {
  if (!BODYLESS_METHODS.has(method ?? '') || !announcesBody(headers)) return undefined;
  return new ProblemError('invalid-request', `a ${method} request to a sandbox port takes no body`);
}

/** Throws invalid-request (400) for a GET or HEAD that announces a body. */
export function refuseBodyOnBodylessMethod(method: string | undefined, headers: IncomingHttpHeaders): void {
  const problem = bodyOnBodylessMethod(method, headers);
  if (problem) throw problem;
}

/** Headers without hop-by-hop ones (and those the Connection header names) and `drop`. */
export function forwardable(
  headers: IncomingHttpHeaders,
  drop: ReadonlySet<string> = new Set(),
): Record<string, string | string[]> {
  const named = new Set(
    String(headers.connection ?? '')
      .split(',')
      .map((h) => h.trim().toLowerCase())
      .filter(Boolean),
  );
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name) || named.has(name) || drop.has(name)) continue;
    out[name] = value;
  }
  return out;
}

/** Options of one proxied exchange. */
export interface PortProxyOptions {
  podIP: string;
  port: number;
  /** Path and query for the sandbox's server, starting with '/'. */
  path: string;
  /** The public prefix of the route (sent as X-Forwarded-Prefix, so apps can build links). */
  prefix: string;
  connectTimeoutMs: number;
  /** Deadline of the whole exchange, request and answer. */
  timeoutMs: number;
  /** Most request body bytes forwarded (413 beyond when declared; cut beyond when streamed). */
  maxBodyBytes: number;
  /** The caller's API key's pool (exec/relay/port-upstreams.ts). */
  agent: http.Agent;
  /** Forward Cookie and Set-Cookie (GATEWAY_PORT_PROXY_FORWARD_COOKIES). */
  forwardCookies: boolean;
  /**
   * Until this time (ms since the epoch), a request without a body whose connection is refused is
   * sent again every REFUSED_RETRY_MS: set when this very request woke the session (issue 27), whose
   * startup command is still bringing its server up. Unset: a refusal is answered at once.
   */
  refusedRetryUntil?: number;
}

/** Pause between connection attempts to a server that is still starting (refusedRetryUntil). */
const REFUSED_RETRY_MS = 100;

/** Fails once more than `limit` bytes went through (bodies without a declared length). */
class BodyLimit extends Transform {
  private size = 0;
  constructor(private readonly limit: number) {
    super();
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.size += chunk.length;
    if (this.size > this.limit) cb(new Error(`the request body exceeds ${this.limit} bytes`));
    else cb(null, chunk);
  }
}

/**
 * Proxies `req` to the sandbox and writes the answer to `res` (the caller's response, hijacked).
 * Rejects with a ProblemError when nothing was answered yet (unreachable, refused, deadline);
 * once the answer's head is out, failures cut the connection instead.
 */
export function proxyToPort(req: IncomingMessage, res: ServerResponse, o: PortProxyOptions): Promise<void> {
  const bodyOnBodyless = bodyOnBodylessMethod(req.method, req.headers);
  if (bodyOnBodyless) return Promise.reject(bodyOnBodyless);
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > o.maxBodyBytes) {
    return Promise.reject(
      new ProblemError(
        'payload-too-large',
        `the request body is ${declared} bytes; the limit is ${o.maxBodyBytes}`,
      ),
    );
  }
  const headers = forwardable(req.headers, o.forwardCookies ? GATEWAY_ONLY : GATEWAY_ONLY_AND_COOKIES);
  headers.host = o.podIP.includes(':') ? `[${o.podIP}]:${o.port}` : `${o.podIP}:${o.port}`;
  headers['x-forwarded-prefix'] = o.prefix;
  if (req.headers.host) headers['x-forwarded-host'] = req.headers.host;
  const bodyless = BODYLESS_METHODS.has(req.method ?? '') || !announcesBody(req.headers);
  return exchange(req, res, o, { headers, bodyless, deadlineAt: Date.now() + o.timeoutMs, retry: bodyless });
}

/**
 * One attempt. A kept-alive connection the server closed just as it was reused fails with
 * ECONNRESET before any answer (the server never saw the request): a request without a body is
 * then sent once more on a new connection (`retry`), as HTTP/1.1 clients do.
 */
function exchange(
  req: IncomingMessage,
  res: ServerResponse,
  o: PortProxyOptions,
  a: { headers: Record<string, string | string[]>; bodyless: boolean; deadlineAt: number; retry: boolean },
): Promise<void> {
  return new Promise((resolve, reject) => {
    let answered = false;
    let upstream: http.ClientRequest;
    try {
      upstream = http.request({
        host: o.podIP,
        port: o.port,
        method: req.method,
        path: o.path,
        headers: a.headers,
        agent: o.agent,
      });
    } catch (err) {
      // node refuses a path or header it would have to send unescaped (never a 500 for the caller's input).
      reject(new ProblemError('invalid-request', 'the request cannot be forwarded as it is', { cause: err }));
      return;
    }
    const stop = (): void => {
      clearTimeout(connectTimer);
      clearTimeout(deadline);
      res.off('close', onClose);
    };
    const fail = (problem: ProblemError): void => {
      stop();
      upstream.destroy();
      if (answered) res.destroy();
      else reject(problem);
    };
    const connectTimer = setTimeout(
      () =>
        fail(
          new ProblemError(
            'upstream-timeout',
            `port ${o.port} of the sandbox did not accept the connection in time`,
          ),
        ),
      o.connectTimeoutMs,
    );
    const deadline = setTimeout(
      () =>
        fail(
          new ProblemError(
            'upstream-timeout',
            `port ${o.port} of the sandbox did not answer within the deadline`,
          ),
        ),
      Math.max(0, a.deadlineAt - Date.now()),
    );
    upstream.once('socket', (s) => {
      if (!s.connecting) clearTimeout(connectTimer);
      else s.once('connect', () => clearTimeout(connectTimer));
    });
    upstream.once('error', (err: NodeJS.ErrnoException) => {
      if (!answered && a.retry && upstream.reusedSocket && err.code === 'ECONNRESET') {
        stop();
        resolve(exchange(req, res, o, { ...a, retry: false }));
        return;
      }
      if (!answered && a.bodyless && err.code === 'ECONNREFUSED' && Date.now() < (o.refusedRetryUntil ?? 0)) {
        stop();
        setTimeout(() => resolve(exchange(req, res, o, a)), REFUSED_RETRY_MS);
        return;
      }
      const detail =
        err.code === 'ECONNREFUSED'
          ? `nothing listens on port ${o.port} of the sandbox`
          : `port ${o.port} of the sandbox could not be reached`;
      fail(new ProblemError('upstream-error', detail, { cause: err }));
    });
    upstream.once('response', (answer) => {
      answered = true;
      res.writeHead(
        answer.statusCode ?? 502,
        forwardable(answer.headers, o.forwardCookies ? undefined : SET_COOKIE),
      );
      answer.pipe(res);
      answer.once('end', () => {
        stop();
        resolve();
      });
      answer.once('error', () => res.destroy());
    });
    // The caller leaving ends the exchange.
    const onClose = (): void => {
      if (!res.writableFinished) {
        stop();
        upstream.destroy();
        resolve();
      }
    };
    res.once('close', onClose);
    if (a.bodyless) {
      upstream.end();
      return;
    }
    const limited = new BodyLimit(o.maxBodyBytes);
    limited.once('error', () =>
      fail(new ProblemError('payload-too-large', `the request body exceeds ${o.maxBodyBytes} bytes`)),
    );
    req.pipe(limited).pipe(upstream);
  });
}
