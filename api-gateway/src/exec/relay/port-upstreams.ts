/**
 * The port route's upstream connections, budgeted per API key (issue 25). One keep-alive pool for
 * every tenant (512 sockets, no idle timeout) let one key hold them all, idle, and other tenants'
 * port requests waited for a socket until they timed out. Now:
 *   - each API key has its own pool: at most `maxSocketsPerKey` sockets (open or kept alive), so a
 *     key that holds its budget only queues its own requests;
 *   - a kept-alive socket is closed after `idleTimeoutMs` without a request (never while a
 *     request uses it: a slow answer that streams is bounded by the exchange's deadline instead);
 *   - each API key may hold at most `maxSocketsPerKey` upstream WebSockets open at once; past it
 *     an upgrade is refused with 429 concurrency-limited before anything is dialed.
 * Pools are made on a key's first request and live as long as the route (keys come from the key
 * file: their number is bounded).
 */
import http from 'node:http';
import type { Duplex } from 'node:stream';

import { ProblemError } from '../../errors.js';

/** Budgets of the port route's upstreams (GATEWAY_PORT_PROXY_*). */
export interface PortUpstreamLimits {
  maxSocketsPerKey: number;
  idleTimeoutMs: number;
}

/** A keep-alive pool whose sockets time out only while idle. */
class IdlePool extends http.Agent {
  constructor(
    maxSockets: number,
    private readonly idleTimeoutMs: number,
  ) {
    super({ keepAlive: true, maxSockets, maxTotalSockets: maxSockets });
  }

  /**
   * A socket going back to the pool: Node's own rule first (it may refuse, e.g. for a server's
   * too-short keep-alive hint), then the idle timer. The pool destroys a free socket on timeout.
   */
  override keepSocketAlive(socket: Duplex): boolean {
    const keep = super.keepSocketAlive(socket) as unknown as boolean;
    if (keep) (socket as Duplex & { setTimeout(ms: number): void }).setTimeout(this.idleTimeoutMs);
    return keep;
  }

  /** A pooled socket taken for a request: no timeout while it is in use. */
  override reuseSocket(socket: Duplex, request: http.ClientRequest): void {
    (socket as Duplex & { setTimeout(ms: number): void }).setTimeout(0);
    super.reuseSocket(socket, request);
  }
}

/** The pools and WebSocket counts of every API key. */
export class PortUpstreams {
  private readonly pools = new Map<string, IdlePool>();
  private readonly webSockets = new Map<string, number>();

  constructor(private readonly limits: PortUpstreamLimits) {}

  /** The HTTP pool of an API key (made on first use). */
  poolFor(keyId: string): http.Agent {
    let pool = this.pools.get(keyId);
    if (!pool) {
      pool = new IdlePool(this.limits.maxSocketsPerKey, this.limits.idleTimeoutMs);
      this.pools.set(keyId, pool);
    }
    return pool;
  }

  /**
   * Takes one of the key's upstream WebSocket places; returns its release (idempotent). Throws 429
   * concurrency-limited when the key holds its budget.
   */
  acquireWebSocket(keyId: string): () => void {
    const held = this.webSockets.get(keyId) ?? 0;
    if (held >= this.limits.maxSocketsPerKey) {
      throw new ProblemError(
        'concurrency-limited',
        `this API key holds ${held} WebSockets to sandbox ports, its limit`,
        { retryAfterSeconds: 1 },
      );
    }
    this.webSockets.set(keyId, held + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const now = (this.webSockets.get(keyId) ?? 1) - 1;
      if (now > 0) this.webSockets.set(keyId, now);
      else this.webSockets.delete(keyId);
    };
  }

  /** Destroys every pooled socket (the route closing). */
  close(): void {
    for (const pool of this.pools.values()) pool.destroy();
    this.pools.clear();
  }
}
