/**
 * The egress proxy: an HTTP/1.1 forward proxy that sandboxes reach through HTTP_PROXY and
 * HTTPS_PROXY (a direct connection is refused by NetworkPolicy).
 *
 * - Plain HTTP (`GET http://host/path`, or origin-form with a Host header): decided by the host
 *   (the URL's, which must equal the Host header), then per request by the rule's methods and path
 *   prefixes, with its headers injected (forward.ts).
 * - HTTPS (`CONNECT host:port`): decided by the CONNECT host; the proxy answers 200, reads the
 *   ClientHello and refuses a tunnel whose SNI is not the CONNECT host or that is not TLS. A rule
 *   that needs requests (methods, paths, injected headers) has its TLS terminated with the
 *   namespace's CA (intercept.ts); otherwise the bytes are relayed untouched.
 *
 * Every decision is audited: a refusal at once, an allowed request or tunnel when it ends (with
 * its byte counts). Rules are read per connection and per request (a host decision is remembered
 * per rule set: DecisionCache), and when a session's rules change its open tunnels are checked
 * again and closed if no longer allowed (`revalidate`).
 *
 * The plain HTTP path does no more per request than it must (bench-egress): no promise unless a
 * Secret is read, no URL object for an ordinary absolute URL (`plainUrl`), no pipe and no timer of
 * its own (forward.ts, idle.ts).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect as netConnect, type LookupFunction, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';

import { AUDIT_KINDS, type AuditEvent } from '@sandbox-platform/api';

import { Forwarder, refuse, type ForwardDeps, type ForwardOutcome } from './forward.js';
import { DecisionCache, decideHost, type HostDecision } from './rules.js';
import { plainAddress, type SandboxIdentity, type SessionResolver } from './sessions.js';
import { CLIENT_HELLO_MAX_BYTES, parseClientHello } from './tls/client-hello.js';

/** Terminates TLS of an intercepted tunnel and serves its requests (intercept.ts). */
export interface Interceptor {
  serve(
    socket: Socket,
    ctx: { session: SandboxIdentity; host: string; port: number; decision: HostDecision & { allowed: true } },
  ): Promise<void>;
}

/** Dependencies of the proxy (composition root: main.ts). */
export interface ProxyDeps extends ForwardDeps {
  sessions: SessionResolver;
  /** Receives every audit event (the audit store, batched). */
  audit: (event: AuditEvent) => void;
  /** The blocked-address lookup for tunnels (dial.ts). */
  lookup: LookupFunction;
  interceptor?: Interceptor;
  /** How long a tunnel may take to send its ClientHello, ms. */
  helloTimeoutMs: number;
  /** Most open tunnels per session (hostile input: bounded). */
  maxTunnelsPerSession: number;
  clock?: () => Date;
}

interface OpenTunnel {
  host: string;
  port: number;
  socket: Duplex;
}

/** The proxy server and its per-session tunnel registry. */
export class EgressProxy {
  readonly server: Server;
  private readonly tunnels = new Map<string, Set<OpenTunnel>>();
  /** Host decisions per rule set (invalidated by a rule change: a new rule set). */
  private readonly decisions = new DecisionCache();
  private readonly forwarder: Forwarder;

  constructor(private readonly deps: ProxyDeps) {
    this.forwarder = new Forwarder(deps);
    this.server = createServer({ requestTimeout: 0, headersTimeout: 30_000, keepAliveTimeout: 30_000 });
    this.server.on('request', (req, res) => this.onRequest(req, res));
    this.server.on('connect', (req: IncomingMessage, socket: Duplex, head: Buffer) =>
      this.onConnect(req, socket as Socket, head),
    );
  }

  private now(): string {
    return (this.deps.clock?.() ?? new Date()).toISOString();
  }

  private audit(session: SandboxIdentity, outcome: string, detail: AuditEvent['detail']): void {
    this.deps.audit({
      time: this.now(),
      namespace: session.namespace,
      session: session.name,
      kind: AUDIT_KINDS.egress,
      actor: 'sandbox',
      outcome,
      detail,
    });
  }

  private onRequest(req: IncomingMessage, res: ServerResponse): void {
    const session = this.deps.sessions.byAddress(plainAddress(req.socket.remoteAddress));
    if (!session) return refuse(res, 403, 'this address is not a sandbox of the platform');
    const target = plainTarget(req);
    if ('error' in target) {
      this.audit(session, 'denied', {
        host: target.host ?? null,
        reason: target.error,
        method: req.method ?? null,
      });
      return refuse(res, 400, target.error);
    }
    const decision = this.decisions.decide(this.deps.sessions.rules(session), target.host, target.port);
    const base = {
      host: target.host,
      port: target.port,
      method: req.method ?? 'GET',
      path: target.path.slice(0, 512),
      scheme: 'http',
    };
    if (!decision.allowed) {
      this.audit(session, 'denied', { ...base, reason: decision.reason });
      return refuse(
        res,
        403,
        `${target.host}:${target.port} is not allowed for this session (${decision.reason})`,
      );
    }
    this.forwarder.forward(
      { req, res },
      { protocol: 'http:', host: target.host, port: target.port, path: target.path },
      { rule: decision.rule, session },
      (out) => this.auditForward(session, base, out),
    );
  }

  /** Audits one forwarded request (also called by the interceptor). */
  auditForward(session: SandboxIdentity, base: AuditEvent['detail'], out: ForwardOutcome): void {
    this.audit(session, out.allowed ? 'allowed' : 'denied', {
      ...base,
      status: out.status ?? null,
      reason: out.reason ?? null,
      bytesUp: out.bytesUp,
      bytesDown: out.bytesDown,
      injectedHeaders: out.injected,
    });
  }

  private onConnect(req: IncomingMessage, socket: Socket, head: Buffer): void {
    socket.on('error', () => socket.destroy());
    const session = this.deps.sessions.byAddress(plainAddress(socket.remoteAddress));
    if (!session) return void socket.end('HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n');
    const authority = parseAuthority(req.url ?? '');
    if (!authority) {
      this.audit(session, 'denied', {
        host: (req.url ?? '').slice(0, 256),
        reason: 'invalid-authority',
        scheme: 'connect',
      });
      return void socket.end('HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n');
    }
    const { host, port } = authority;
    const decision = this.decisions.decide(this.deps.sessions.rules(session), host, port);
    const base = { host, port, scheme: 'connect' };
    if (!decision.allowed) {
      this.audit(session, 'denied', { ...base, reason: decision.reason });
      const body = `egress proxy: ${host}:${port} is not allowed for this session (${decision.reason})\n`;
      return void socket.end(
        `HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
    }
    const open = this.tunnels.get(key(session)) ?? new Set<OpenTunnel>();
    if (open.size >= this.deps.maxTunnelsPerSession) {
      this.audit(session, 'denied', { ...base, reason: 'too-many-tunnels' });
      return void socket.end('HTTP/1.1 429 Too Many Requests\r\ncontent-length: 0\r\n\r\n');
    }
    const tunnel: OpenTunnel = { host, port, socket };
    open.add(tunnel);
    this.tunnels.set(key(session), open);
    socket.once('close', () => {
      open.delete(tunnel);
      if (open.size === 0 && this.tunnels.get(key(session)) === open) this.tunnels.delete(key(session));
    });
    socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    void this.afterHello(socket, head, { session, host, port, decision, base });
  }

  private async afterHello(
    socket: Socket,
    head: Buffer,
    ctx: {
      session: SandboxIdentity;
      host: string;
      port: number;
      decision: HostDecision & { allowed: true };
      base: AuditEvent['detail'];
    },
  ): Promise<void> {
    const hello = await readHello(socket, head, this.deps.helloTimeoutMs);
    const sni = hello.state === 'hello' ? hello.serverName?.toLowerCase().replace(/\.$/, '') : undefined;
    if (hello.state !== 'hello' || sni !== ctx.host.toLowerCase().replace(/\.$/, '')) {
      const reason =
        hello.state === 'hello' ? 'sni-mismatch' : hello.state === 'not-tls' ? 'not-tls' : 'no-client-hello';
      this.audit(ctx.session, 'denied', { ...ctx.base, reason, sni: sni?.slice(0, 253) ?? null });
      return void socket.destroy();
    }
    socket.unshift(hello.bytes);
    if (ctx.decision.intercept) {
      if (!this.deps.interceptor) {
        this.audit(ctx.session, 'denied', { ...ctx.base, reason: 'interception-unavailable' });
        return void socket.destroy();
      }
      this.audit(ctx.session, 'allowed', { ...ctx.base, intercepted: true });
      return this.deps.interceptor.serve(socket, ctx);
    }
    this.relay(socket, ctx);
  }

  private relay(
    socket: Socket,
    ctx: { session: SandboxIdentity; host: string; port: number; base: AuditEvent['detail'] },
  ): void {
    let bytesUp = 0;
    let bytesDown = 0;
    let failure: string | undefined;
    const upstream = netConnect({ host: ctx.host, port: ctx.port, lookup: this.deps.lookup });
    upstream.setNoDelay(true);
    socket.setNoDelay(true);
    upstream.on('error', (err: NodeJS.ErrnoException) => {
      failure ??= err.code === 'EGRESS_BLOCKED' ? 'blocked-address' : `upstream-${err.code ?? 'error'}`;
      socket.destroy();
    });
    socket.on('data', (c: Buffer) => (bytesUp += c.length));
    upstream.on('data', (c: Buffer) => (bytesDown += c.length));
    socket.pipe(upstream);
    upstream.pipe(socket);
    socket.on('close', () => upstream.destroy());
    upstream.on('close', () => {
      socket.destroy();
      this.audit(ctx.session, failure ? 'error' : 'allowed', {
        ...ctx.base,
        reason: failure ?? null,
        bytesUp,
        bytesDown,
      });
    });
  }

  /**
   * Checks a session's open tunnels against its rules now; closes (and audits) each one no rule
   * allows any more. Called when the session's egress rules change.
   */
  revalidate(session: SandboxIdentity): number {
    const open = this.tunnels.get(key(session));
    let closed = 0;
    for (const t of open ?? []) {
      if (!decideHost(this.deps.sessions.rules(session), t.host, t.port).allowed) {
        this.audit(session, 'denied', {
          host: t.host,
          port: t.port,
          scheme: 'connect',
          reason: 'rule-removed',
        });
        t.socket.destroy();
        closed++;
      }
    }
    return closed;
  }
}

const key = (s: SandboxIdentity): string => `${s.namespace}/${s.name}`;

/** host and port of a CONNECT authority (`host:port`, `[v6]:port`). */
export function parseAuthority(authority: string): { host: string; port: number } | undefined {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:/?#[\]@\s]+):(\d{1,5})$/.exec(authority);
  if (!m) return undefined;
  const port = Number(m[2]);
  return port >= 1 && port <= 65535 ? { host: m[1]!, port } : undefined;
}

/** The target of a plain HTTP proxy request, or why it is refused. */
export function plainTarget(req: IncomingMessage): PlainTarget {
  const raw = req.url ?? '';
  if (raw.startsWith('http://')) return absoluteTarget(raw, (req.headers.host ?? '').toLowerCase());
  if (!raw.startsWith('/')) return { error: 'only http:// URLs are proxied (use CONNECT for HTTPS)' };
  const host = req.headers.host ?? '';
  const auth = parseAuthority(/:\d+$/.test(host) ? host : `${host}:80`);
  return auth ? { ...auth, path: raw } : { error: 'origin-form request without a valid Host header' };
}

type PlainTarget = { host: string; port: number; path: string } | { error: string; host?: string };

function absoluteTarget(raw: string, hostHeader: string): PlainTarget {
  const url = plainUrl(raw) ?? parsedUrl(raw);
  if (url === undefined) return { error: 'invalid URL' };
  if (url.credentials) return { error: 'credentials in the URL are not allowed', host: url.hostname };
  if (hostHeader && hostHeader !== url.host.toLowerCase()) {
    return { error: 'the Host header does not match the URL', host: url.hostname };
  }
  return { host: url.hostname, port: url.port, path: url.path };
}

/** The parts of an absolute URL the proxy uses, as the WHATWG URL parser gives them. */
interface UrlParts {
  hostname: string;
  /** `hostname`, and `:port` unless the port is 80. */
  host: string;
  port: number;
  /** pathname + search. */
  path: string;
  credentials: boolean;
}

function parsedUrl(raw: string): UrlParts | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return undefined;
  }
  return {
    hostname: url.hostname,
    host: url.host,
    port: Number(url.port || 80),
    path: `${url.pathname}${url.search}`,
    credentials: Boolean(url.username || url.password),
  };
}

/**
 * An absolute URL the WHATWG parser keeps exactly as written: a lowercase name whose last label
 * starts with a letter (so never an IPv4 address in any notation), an optional port, a path and
 * query of characters no parser re-encodes. Anything else (and a dot segment, an `xn--` label, a
 * port above 65535) is left to `new URL`: the same result, checked against it in the unit tests.
 */
const PLAIN_URL =
  /^http:\/\/((?:[a-z0-9-]+\.)*[a-z][a-z0-9-]*)(?::([1-9][0-9]{0,4}))?(\/[A-Za-z0-9\-._~!$&'()*+,;=:@/%]*)(\?[A-Za-z0-9\-._~!$&()*+,;=:@/?%]*)?$/;
/** A path segment the URL parser would resolve: `.`, `..`, or either with encoded dots. */
const DOT_SEGMENT = /\/(?:\.|%2e){1,2}(?:\/|$)/i;

/** `parsedUrl` without the URL parser, for the URLs it would keep as written; else undefined. */
export function plainUrl(raw: string): UrlParts | undefined {
  const m = PLAIN_URL.exec(raw);
  if (m === null) return undefined;
  const hostname = m[1]!;
  const port = m[2] === undefined ? 80 : Number(m[2]);
  const pathname = m[3]!;
  if (port > 65535 || hostname.includes('xn--') || DOT_SEGMENT.test(pathname)) return undefined;
  const search = m[4] !== undefined && m[4].length > 1 ? m[4] : '';
  return {
    hostname,
    host: port === 80 ? hostname : `${hostname}:${port}`,
    port,
    path: pathname + search,
    credentials: false,
  };
}

/** Buffers the first TLS record of a tunnel (bounded in bytes and time). */
function readHello(
  socket: Socket,
  head: Buffer,
  timeoutMs: number,
): Promise<
  { state: 'hello'; serverName: string | undefined; bytes: Buffer } | { state: 'not-tls' | 'incomplete' }
> {
  return new Promise((resolve) => {
    let buf = head;
    const finish = (r: Parameters<typeof resolve>[0]): void => {
      clearTimeout(timer);
      socket.off('data', onData);
      socket.off('close', onClose);
      socket.pause();
      resolve(r);
    };
    const check = (): void => {
      const p = parseClientHello(buf);
      if (p.state === 'hello') finish({ ...p, bytes: buf });
      else if (p.state === 'not-tls' || buf.length >= CLIENT_HELLO_MAX_BYTES) finish({ state: 'not-tls' });
    };
    const onData = (c: Buffer): void => {
      buf = Buffer.concat([buf, c]);
      check();
    };
    const onClose = (): void => finish({ state: 'incomplete' });
    const timer = setTimeout(() => finish({ state: 'incomplete' }), timeoutMs);
    socket.on('data', onData);
    socket.on('close', onClose);
    if (buf.length > 0) check();
  });
}
