/**
 * TLS interception of tunnels whose rule must see requests (methods, path prefixes, injected
 * headers): the proxy completes the sandbox's TLS handshake with a leaf certificate for the
 * CONNECT host signed by the namespace's CA, reads each HTTP/1.1 request, checks it and forwards
 * it over a new TLS connection to the real host, verified against the proxy's trust store
 * (forward.ts). The sandbox sees only the leaf; the credential exists only in the proxy.
 *
 * HTTP/2 is not offered (ALPN http/1.1 only); a client insisting on h2 fails the handshake.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { Duplex } from 'node:stream';
import { createSecureContext, TLSSocket, type SecureContext } from 'node:tls';

import type { AuditEvent } from '@sandbox-platform/api';

import type { CertificateAuthority } from './tls/ca.js';
import { issueLeaf } from './tls/ca.js';
import { Forwarder, refuse, type ForwardDeps, type ForwardOutcome } from './forward.js';
import type { Interceptor } from './proxy.js';
import { DecisionCache } from './rules.js';
import type { SandboxIdentity, SessionResolver } from './sessions.js';

/** Where the namespaces' CAs come from (kube-ca.ts: a Secret per namespace). */
export interface CaSource {
  forNamespace(namespace: string): Promise<CertificateAuthority>;
}

/** Dependencies of the interceptor. */
export interface InterceptorDeps extends ForwardDeps {
  cas: CaSource;
  sessions: SessionResolver;
  /** Audits one request (EgressProxy.auditForward). */
  auditForward: (session: SandboxIdentity, base: AuditEvent['detail'], out: ForwardOutcome) => void;
  /** Most leaf contexts kept (per namespace and host). */
  maxLeaves?: number;
  /** Leaves are re-issued after this long, ms (they are valid for 7 days). */
  leafTtlMs?: number;
}

interface TunnelContext {
  session: SandboxIdentity;
  host: string;
  port: number;
}

/** The interceptor: one HTTP server fed the decrypted sockets. */
export class TlsInterceptor implements Interceptor {
  private readonly http: Server;
  private readonly contexts = new WeakMap<object, TunnelContext>();
  private readonly leaves = new Map<string, { ctx: Promise<SecureContext>; at: number }>();
  private readonly decisions = new DecisionCache();
  private readonly forwarder: Forwarder;

  constructor(private readonly deps: InterceptorDeps) {
    this.forwarder = new Forwarder(deps);
    this.http = createServer({ requestTimeout: 0, headersTimeout: 30_000, keepAliveTimeout: 30_000 });
    this.http.on('request', (req, res) => this.onRequest(req, res));
  }

  private leaf(namespace: string, host: string): Promise<SecureContext> {
    const id = `${namespace}/${host}`;
    const hit = this.leaves.get(id);
    if (hit && Date.now() - hit.at < (this.deps.leafTtlMs ?? 86400_000)) return hit.ctx;
    const ctx = this.deps.cas.forNamespace(namespace).then((ca) => {
      const leaf = issueLeaf(ca, host);
      return createSecureContext({ cert: leaf.certPem + ca.certPem, key: leaf.keyPem });
    });
    ctx.catch(() => this.leaves.delete(id));
    if (this.leaves.size >= (this.deps.maxLeaves ?? 1000)) {
      this.leaves.delete(this.leaves.keys().next().value!);
    }
    this.leaves.set(id, { ctx, at: Date.now() });
    return ctx;
  }

  async serve(socket: Socket, ctx: TunnelContext): Promise<void> {
    let secureContext: SecureContext;
    try {
      secureContext = await this.leaf(ctx.session.namespace, ctx.host);
    } catch {
      socket.destroy();
      return;
    }
    // Through a plain Duplex, not the net.Socket itself: TLSSocket would take over the socket's
    // handle and lose the ClientHello the proxy read (and unshifted) to check the SNI.
    const stream = Duplex.from({ readable: socket, writable: socket });
    socket.on('close', () => stream.destroy());
    const tls = new TLSSocket(stream, { isServer: true, secureContext, ALPNProtocols: ['http/1.1'] });
    tls.on('error', () => tls.destroy());
    this.contexts.set(tls, ctx);
    this.http.emit('connection', tls);
    socket.resume();
  }

  private onRequest(req: IncomingMessage, res: ServerResponse): void {
    const ctx = this.contexts.get(req.socket);
    if (!ctx) return refuse(res, 500, 'no tunnel context');
    const path = req.url ?? '/';
    const base = {
      host: ctx.host,
      port: ctx.port,
      method: req.method ?? 'GET',
      path: path.slice(0, 512),
      scheme: 'https-intercepted',
    };
    const hostHeader = (req.headers.host ?? ctx.host).toLowerCase().replace(/:\d+$/, '');
    if (hostHeader !== ctx.host.toLowerCase() || !path.startsWith('/')) {
      this.deps.auditForward(ctx.session, base, {
        allowed: false,
        reason: 'host-mismatch',
        status: 400,
        bytesUp: 0,
        bytesDown: 0,
        injected: 0,
      });
      return refuse(res, 400, 'the Host header does not match the tunnel');
    }
    const decision = this.decisions.decide(this.deps.sessions.rules(ctx.session), ctx.host, ctx.port);
    if (!decision.allowed) {
      this.deps.auditForward(ctx.session, base, {
        allowed: false,
        reason: decision.reason,
        status: 403,
        bytesUp: 0,
        bytesDown: 0,
        injected: 0,
      });
      return refuse(res, 403, `${ctx.host}:${ctx.port} is no longer allowed for this session`);
    }
    this.forwarder.forward(
      { req, res },
      { protocol: 'https:', host: ctx.host, port: ctx.port, path },
      { rule: decision.rule, session: ctx.session },
      (out) => this.deps.auditForward(ctx.session, base, out),
    );
  }
}
