/**
 * One HTTP request forwarded upstream: plain HTTP taken from the proxy's own listener, or a request
 * read inside intercepted TLS. The rule's method and path limits are checked first, its headers
 * injected from Secrets (the sandbox never sees their values), hop-by-hop headers dropped both
 * ways, and the bytes each way counted for the audit record. Every upstream request is bounded by
 * an idle timeout on one timer shared by all of them (idle.ts).
 */
import { request as httpRequest, type Agent, type IncomingMessage, type ServerResponse } from 'node:http';
import { request as httpsRequest, type Agent as HttpsAgent } from 'node:https';
import type { OutgoingHttpHeaders } from 'node:http';
import type { Readable, Writable } from 'node:stream';

import { decideRequest, type EgressRule } from './rules.js';
import { IdleTimeouts } from './idle.js';
import type { SandboxIdentity, SecretReader } from './sessions.js';

/** Headers that belong to one connection, never forwarded (RFC 9110 7.6.1), and the proxy's own. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'proxy-authenticate',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/** A request and its answer. */
export interface Exchange {
  req: IncomingMessage;
  res: ServerResponse;
}

/** Where a request goes. */
export interface ForwardTarget {
  protocol: 'http:' | 'https:';
  host: string;
  port: number;
  path: string;
}

/** What a forwarded (or refused) request came to, for the audit record. */
export interface ForwardOutcome {
  allowed: boolean;
  reason?: string;
  status?: number;
  bytesUp: number;
  bytesDown: number;
  injected: number;
}

/** Dependencies of `forward`. */
export interface ForwardDeps {
  httpAgent: Agent;
  httpsAgent: HttpsAgent;
  secrets: SecretReader;
  /** Upstream response header timeout and idle socket timeout, ms. */
  timeoutMs: number;
}

/** Copies headers minus hop-by-hop ones and those named in Connection. */
export function endToEnd(headers: IncomingMessage['headers']): OutgoingHttpHeaders {
  const connection = headers.connection;
  const named =
    connection === undefined
      ? undefined
      : new Set(
          String(connection)
            .split(',')
            .map((h) => h.trim().toLowerCase())
            .filter(Boolean),
        );
  const out: OutgoingHttpHeaders = {};
  for (const k of Object.keys(headers)) {
    const v = headers[k];
    if (v !== undefined && !HOP_BY_HOP.has(k) && !named?.has(k)) out[k] = v;
  }
  return out;
}

/** Refuses a request with a short text answer (the sandbox's tools show it). */
export function refuse(res: ServerResponse, status: number, message: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = `egress proxy: ${message}\n`;
  res.writeHead(status, {
    'content-type': 'text/plain; charset=utf-8',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}

/** Injected header values of a rule, read from the session's Secrets. */
async function injected(
  rule: EgressRule,
  session: SandboxIdentity,
  secrets: SecretReader,
): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const h of rule.injectHeaders ?? []) {
    out[h.name.toLowerCase()] = await secrets.read(
      session.namespace,
      h.secretKeyRef.name,
      h.secretKeyRef.key,
    );
  }
  return out;
}

/** What a forwarded request is sent with. */
interface Outgoing {
  method: string;
  headers: OutgoingHttpHeaders;
  injected: number;
}

/**
 * Forwards requests: the upstream agents, the Secrets of injected headers, and one shared idle
 * timer (idle.ts) bounding every upstream request by `timeoutMs`.
 */
export class Forwarder {
  readonly timeouts: IdleTimeouts;

  constructor(private readonly deps: ForwardDeps) {
    this.timeouts = new IdleTimeouts(deps.timeoutMs);
  }

  /**
   * Forwards `req` to `target` under `rule`, answering on `res`; calls `done` once, when the
   * exchange ends. A rule without injected headers is forwarded in the same turn (no Secret read,
   * no promise).
   */
  forward(
    { req, res }: Exchange,
    target: ForwardTarget,
    ctx: { rule: EgressRule; session: SandboxIdentity },
    done: (out: ForwardOutcome) => void,
  ): void {
    const method = req.method ?? 'GET';
    const check = decideRequest(ctx.rule, method, target.path);
    if (!check.allowed) {
      refuse(
        res,
        403,
        `${method} ${target.path.split('?')[0]} is not allowed for ${target.host} (${check.reason})`,
      );
      return done({
        allowed: false,
        reason: check.reason,
        status: 403,
        bytesUp: 0,
        bytesDown: 0,
        injected: 0,
      });
    }
    if (!ctx.rule.injectHeaders?.length) {
      const headers = upstreamHeaders(req, target, undefined);
      return this.send({ req, res }, target, { method, headers, injected: 0 }, done);
    }
    injected(ctx.rule, ctx.session, this.deps.secrets).then(
      (extra) => {
        const headers = upstreamHeaders(req, target, extra);
        this.send({ req, res }, target, { method, headers, injected: Object.keys(extra).length }, done);
      },
      () => {
        refuse(res, 502, `a credential for ${target.host} is not available`);
        done({
          allowed: false,
          reason: 'credential-missing',
          status: 502,
          bytesUp: 0,
          bytesDown: 0,
          injected: 0,
        });
      },
    );
  }

  /**
   * Sends the request upstream and its answer back. The bytes each way are counted by the
   * handlers that move them (no extra listeners, no pipe): a chunk is written on, and its source
   * paused until the other side drains when the write was not taken at once.
   */
  private send(
    { req, res }: Exchange,
    target: ForwardTarget,
    out: Outgoing,
    done: (out: ForwardOutcome) => void,
  ): void {
    const timeouts = this.timeouts;
    let bytesUp = 0;
    let bytesDown = 0;
    let finished = false;
    const https = target.protocol === 'https:';
    const upstream = (https ? httpsRequest : httpRequest)({
      host: target.host,
      port: target.port,
      path: target.path,
      method: out.method,
      headers: out.headers,
      agent: https ? this.deps.httpsAgent : this.deps.httpAgent,
      servername: https ? target.host : undefined,
    });
    const idle = timeouts.add(() => upstream.destroy(new Error('upstream timed out')));
    const finish = (status: number | undefined, reason?: string): void => {
      if (finished) return;
      finished = true;
      timeouts.delete(idle);
      done({ allowed: true, reason, status, bytesUp, bytesDown, injected: out.injected });
    };
    upstream.on('error', (err: NodeJS.ErrnoException) => {
      const blocked = err.code === 'EGRESS_BLOCKED';
      refuse(
        res,
        blocked ? 403 : 502,
        blocked
          ? `${target.host} resolves only to blocked addresses`
          : `upstream ${target.host} failed: ${err.code ?? err.message}`,
      );
      finish(blocked ? 403 : 502, blocked ? 'blocked-address' : 'upstream-error');
    });
    // Closed with neither an answer nor an error: still one record.
    upstream.on('close', () => finish(undefined, 'upstream-closed'));
    upstream.on('response', (up) => {
      timeouts.touch(idle);
      const status = up.statusCode;
      res.writeHead(status ?? 502, up.statusMessage, endToEnd(up.headers));
      relayChunks(up, res, (n) => {
        bytesDown += n;
        timeouts.touch(idle);
      });
      up.on('end', () => {
        res.end();
        finish(status);
      });
      up.on('error', () => {
        res.destroy();
        finish(status, 'upstream-reset');
      });
    });
    if (bodiless(req)) {
      upstream.end();
    } else {
      relayChunks(req, upstream, (n) => {
        bytesUp += n;
        timeouts.touch(idle);
      });
      req.on('end', () => upstream.end());
    }
    res.on('close', () => {
      if (!res.writableFinished) upstream.destroy();
    });
  }
}

/** The request's end-to-end headers, the injected ones over them, and Host for the target. */
function upstreamHeaders(
  req: IncomingMessage,
  target: ForwardTarget,
  extra: Record<string, string> | undefined,
): OutgoingHttpHeaders {
  const headers = endToEnd(req.headers);
  if (extra) Object.assign(headers, extra);
  headers.host =
    target.port === (target.protocol === 'https:' ? 443 : 80) ? target.host : `${target.host}:${target.port}`;
  return headers;
}

/** True when the request has no body (RFC 9112 6.3: neither Transfer-Encoding nor a Content-Length above 0). */
function bodiless(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] === undefined && (length === undefined || length === '0');
}

/** Copies `from` to `to` chunk by chunk with backpressure; `onChunk` is told each chunk's size. */
function relayChunks(from: Readable, to: Writable, onChunk: (bytes: number) => void): void {
  const resume = (): void => void from.resume();
  from.on('data', (chunk: Buffer) => {
    onChunk(chunk.length);
    if (!to.write(chunk)) {
      from.pause();
      to.once('drain', resume);
    }
  });
}
