/**
 * Keep-alive connection pools to sandbox agents, one per address. The address itself always comes
 * from the session informer (status.podIP); what this module caches is the pooled connections to
 * it. A pool is dropped (its sockets destroyed) only on transport errors (refused, reset,
 * timeout), never because a command exited non-zero; the next call then dials afresh whatever
 * address the informer reports by then.
 *
 * The connections are plain TCP sockets (TCP_NODELAY, TCP keep-alive probes) that carry one
 * request at a time (agent-http.ts writes and parses them); idle ones are reused most recently
 * used first.
 */
import net from 'node:net';

/**
 * Idle sockets are never reused after this long, and are closed soon after it, below Node's
 * default server keepAliveTimeout (5 s), so the gateway does not reuse a socket the agent is
 * closing at the same moment (a reset we could not retry: the request might have been received).
 */
const FREE_SOCKET_TIMEOUT_MS = 4000;
/** How often idle sockets past FREE_SOCKET_TIMEOUT_MS are closed. */
const SWEEP_MS = 500;
const MAX_POOLS = 2048;
/** TCP keep-alive probe delay on pooled sockets (what node:http's keep-alive agent sets). */
const TCP_KEEPALIVE_MS = 1000;

/** The request currently using a connection. */
export interface ConnUser {
  onData(data: Buffer): void;
  onError(err: Error): void;
  /** The socket closed (after onError when it failed). */
  onClose(): void;
}

/** One pooled socket. Its listeners are attached once and forward to the current user. */
export class AgentConn {
  user: ConnUser | undefined;
  idleSince = 0;

  constructor(
    readonly socket: net.Socket,
    private readonly host: HostPool,
  ) {
    socket.on('data', (data: Buffer) => {
      // Bytes nobody asked for (an idle connection): it is not usable any more.
      if (this.user) this.user.onData(data);
      else socket.destroy();
    });
    socket.on('error', (err: Error) => this.user?.onError(err));
    socket.on('close', () => {
      this.host.forget(this);
      const user = this.user;
      this.user = undefined;
      user?.onClose();
    });
  }
}

/** Called when a connection may be available, or with an error when the pool was dropped. */
type Waiter = (err?: Error) => void;

/** The connections to one agent address. */
export class HostPool {
  private readonly idle: AgentConn[] = [];
  private readonly conns = new Set<AgentConn>();
  private readonly waiters: Waiter[] = [];
  private sweep: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly host: string,
    private readonly port: number,
    private readonly maxSockets: number,
    private readonly idleTimeoutMs = FREE_SOCKET_TIMEOUT_MS,
  ) {}

  /**
   * The most recently used idle connection, else a new one (still connecting), else undefined
   * when maxSockets are busy (then `wait`).
   */
  take(): AgentConn | undefined {
    if (this.closed) throw poolDropped();
    const oldest = Date.now() - this.idleTimeoutMs;
    for (let conn = this.idle.pop(); conn; conn = this.idle.pop()) {
      if (conn.idleSince > oldest && !conn.socket.destroyed) return conn;
      conn.socket.destroy();
    }
    if (this.conns.size >= this.maxSockets) return undefined;
    const socket = net.connect({ host: this.host, port: this.port, noDelay: true });
    socket.setKeepAlive(true, TCP_KEEPALIVE_MS);
    const conn = new AgentConn(socket, this);
    this.conns.add(conn);
    return conn;
  }

  /** Waits for a connection to come free; returns the function that stops waiting. */
  wait(waiter: Waiter): () => void {
    this.waiters.push(waiter);
    return () => {
      const i = this.waiters.indexOf(waiter);
      if (i >= 0) this.waiters.splice(i, 1);
    };
  }

  /** A connection whose answer was read completely goes back to the idle list. */
  release(conn: AgentConn): void {
    conn.user = undefined;
    if (this.closed || conn.socket.destroyed) return void conn.socket.destroy();
    if (conn.socket.isPaused()) conn.socket.resume();
    conn.idleSince = Date.now();
    this.idle.push(conn);
    this.sweep ??= setInterval(() => this.closeExpired(), SWEEP_MS).unref();
    this.waiters.shift()?.();
  }

  /** A socket closed: forget it. */
  forget(conn: AgentConn): void {
    this.conns.delete(conn);
    const i = this.idle.indexOf(conn);
    if (i >= 0) this.idle.splice(i, 1);
    if (this.conns.size === 0) this.stopSweep();
    if (!this.closed) this.waiters.shift()?.();
  }

  /** Destroys every connection, idle or busy, and fails the waiting calls (nothing was sent). */
  destroy(): void {
    this.closed = true;
    this.stopSweep();
    for (const conn of this.conns) conn.socket.destroy();
    this.idle.length = 0;
    const waiters = this.waiters.splice(0);
    for (const w of waiters) w(poolDropped());
  }

  private closeExpired(): void {
    const oldest = Date.now() - this.idleTimeoutMs;
    for (const conn of this.idle.filter((c) => c.idleSince <= oldest)) conn.socket.destroy();
  }

  private stopSweep(): void {
    clearInterval(this.sweep);
    this.sweep = undefined;
  }
}

/** Raised to calls waiting for a connection of a dropped pool: their request was never sent. */
function poolDropped(): Error {
  return Object.assign(new Error('the connection pool was dropped'), { code: 'EPOOLDROPPED' });
}

/** `host:port` or `[v6]:port` split into its parts. */
export function splitAddress(address: string): { host: string; port: number } {
  const i = address.lastIndexOf(':');
  return { host: address.slice(0, i).replace(/^\[|\]$/g, ''), port: Number(address.slice(i + 1)) };
}

/** Address-keyed connection pools. */
export class AgentPool {
  private readonly pools = new Map<string, HostPool>();

  constructor(private readonly maxSocketsPerAgent = 64) {}

  /** The pool of an address (host:port), created on first use; most recently used last. */
  get(address: string): HostPool {
    let pool = this.pools.get(address);
    if (pool) {
      this.pools.delete(address);
    } else {
      const { host, port } = splitAddress(address);
      pool = new HostPool(host, port, this.maxSocketsPerAgent);
    }
    this.pools.set(address, pool);
    this.evict();
    return pool;
  }

  /** Destroys an address's pooled sockets after a transport error. */
  drop(address: string): void {
    const pool = this.pools.get(address);
    if (!pool) return;
    this.pools.delete(address);
    pool.destroy();
  }

  /** True when an address currently has a pool (tests, metrics). */
  has(address: string): boolean {
    return this.pools.has(address);
  }

  /** Destroys every pool (shutdown). */
  close(): void {
    for (const pool of this.pools.values()) pool.destroy();
    this.pools.clear();
  }

  private evict(): void {
    while (this.pools.size > MAX_POOLS) {
      const oldest = this.pools.keys().next().value as string;
      this.drop(oldest);
    }
  }
}
