/**
 * One HTTP request forwarded upstream: plain HTTP taken from the proxy's own listener, or a request
 * read inside intercepted TLS. The rule's method and path limits are checked first, its headers
 * injected from Secrets (the sandbox never sees their values), hop-by-hop headers dropped both
 * ways, and the bytes each way counted for the audit record.
 */
import { request as httpRequest, type Agent, type IncomingMessage, type ServerResponse } from 'node:http';
import { request as httpsRequest, type Agent as HttpsAgent } from 'node:https';
import type { OutgoingHttpHeaders } from 'node:http';

import { decideRequest, type EgressRule } from './rules.js';
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
  const named = new Set(
    String(headers.connection ?? '')
      .split(',')
      .map((h) => h.trim().toLowerCase())
      .filter(Boolean),
  );
  const out: OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(headers)) {
    if (v !== undefined && !HOP_BY_HOP.has(k) && !named.has(k)) out[k] = v;
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

/** Forwards `req` to `target` under `rule`, answering on `res`; resolves when the exchange ends. */
export async function forward(
  { req, res }: Exchange,
  target: ForwardTarget,
  ctx: { rule: EgressRule; session: SandboxIdentity },
  deps: ForwardDeps,
): Promise<ForwardOutcome> {
  const method = req.method ?? 'GET';
  const check = decideRequest(ctx.rule, method, target.path);
  if (!check.allowed) {
    refuse(
      res,
      403,
      `${method} ${target.path.split('?')[0]} is not allowed for ${target.host} (${check.reason})`,
    );
    return { allowed: false, reason: check.reason, status: 403, bytesUp: 0, bytesDown: 0, injected: 0 };
  }
  let extra: Record<string, string>;
  try {
    extra = await injected(ctx.rule, ctx.session, deps.secrets);
  } catch {
    refuse(res, 502, `a credential for ${target.host} is not available`);
    return {
      allowed: false,
      reason: 'credential-missing',
      status: 502,
      bytesUp: 0,
      bytesDown: 0,
      injected: 0,
    };
  }
  const headers = { ...endToEnd(req.headers), ...extra };
  headers.host =
    target.port === (target.protocol === 'https:' ? 443 : 80) ? target.host : `${target.host}:${target.port}`;
  return send({ req, res }, target, { method, headers, injected: Object.keys(extra).length }, deps);
}

function send(
  { req, res }: Exchange,
  target: ForwardTarget,
  out: { method: string; headers: OutgoingHttpHeaders; injected: number },
  deps: ForwardDeps,
): Promise<ForwardOutcome> {
  return new Promise((resolve) => {
    let bytesUp = 0;
    let bytesDown = 0;
    const https = target.protocol === 'https:';
    const upstream = (https ? httpsRequest : httpRequest)({
      host: target.host,
      port: target.port,
      path: target.path,
      method: out.method,
      headers: out.headers,
      agent: https ? deps.httpsAgent : deps.httpAgent,
      servername: https ? target.host : undefined,
      timeout: deps.timeoutMs,
    });
    const done = (status: number | undefined, reason?: string): void =>
      resolve({ allowed: true, reason, status, bytesUp, bytesDown, injected: out.injected });
    upstream.on('timeout', () => upstream.destroy(new Error('upstream timed out')));
    upstream.on('error', (err: NodeJS.ErrnoException) => {
      const blocked = err.code === 'EGRESS_BLOCKED';
      refuse(
        res,
        blocked ? 403 : 502,
        blocked
          ? `${target.host} resolves only to blocked addresses`
          : `upstream ${target.host} failed: ${err.code ?? err.message}`,
      );
      done(blocked ? 403 : 502, blocked ? 'blocked-address' : 'upstream-error');
    });
    upstream.on('response', (up) => {
      res.writeHead(up.statusCode ?? 502, up.statusMessage, endToEnd(up.headers));
      up.on('data', (chunk: Buffer) => (bytesDown += chunk.length));
      up.pipe(res);
      up.on('end', () => done(up.statusCode));
      up.on('error', () => {
        res.destroy();
        done(up.statusCode, 'upstream-reset');
      });
    });
    req.on('data', (chunk: Buffer) => (bytesUp += chunk.length));
    req.pipe(upstream);
    res.on('close', () => {
      if (!res.writableFinished) upstream.destroy();
    });
  });
}
