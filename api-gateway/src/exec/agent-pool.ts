/**
 * Keep-alive connection pools to sandbox agents, one per address. The address itself always comes
 * from the session informer (status.podIP); what this module caches is the pooled connections to
 * it. A pool is dropped (its sockets destroyed) only on transport errors (refused, reset,
 * timeout), never because a command exited non-zero; the next call then dials afresh whatever
 * address the informer reports by then.
 */
import http from 'node:http';

/**
 * Idle sockets are closed after this long, below Node's default server keepAliveTimeout (5 s), so
 * the gateway does not reuse a socket the agent is closing at the same moment (a reset we could
 * not retry: the request might have been received).
 */
const FREE_SOCKET_TIMEOUT_MS = 4000;
const MAX_POOLS = 2048;

/** Address-keyed http.Agent pools. */
export class AgentPool {
  private readonly pools = new Map<string, http.Agent>();

  constructor(private readonly maxSocketsPerAgent = 64) {}

  /** The pool of an address (host:port), created on first use; most recently used last. */
  get(address: string): http.Agent {
    let agent = this.pools.get(address);
    if (agent) {
      this.pools.delete(address);
    } else {
      agent = new http.Agent({
        keepAlive: true,
        timeout: FREE_SOCKET_TIMEOUT_MS,
        maxSockets: this.maxSocketsPerAgent,
        scheduling: 'lifo',
      });
    }
    this.pools.set(address, agent);
    this.evict();
    return agent;
  }

  /** Destroys an address's pooled sockets after a transport error. */
  drop(address: string): void {
    const agent = this.pools.get(address);
    if (!agent) return;
    this.pools.delete(address);
    agent.destroy();
  }

  /** True when an address currently has a pool (tests, metrics). */
  has(address: string): boolean {
    return this.pools.has(address);
  }

  /** Destroys every pool (shutdown). */
  close(): void {
    for (const agent of this.pools.values()) agent.destroy();
    this.pools.clear();
  }

  private evict(): void {
    while (this.pools.size > MAX_POOLS) {
      const oldest = this.pools.keys().next().value as string;
      this.drop(oldest);
    }
  }
}
