/**
 * The references the gateway is measured against, each in front of the same agent: what they are,
 * how to start one, and what their ratio to a direct call means. One table for the local and the
 * cluster mode (gateway.bench.ts) and for the child processes that serve them (local-setup.ts).
 */
import { startHttpFloor } from './http-floor.js';
import type { Listening } from './listen.js';
import { startTcpPipe } from './tcp-pipe.js';
import { startTrivialProxy } from './trivial-proxy.js';

/** An agent to forward to, with the token its calls need. */
export interface AgentTarget {
  host: string;
  port: number;
  token: string;
}

/** One reference. */
export interface Reference {
  /** Role name of its child process (serveRole). */
  readonly role: string;
  readonly label: string;
  /** What its ratio to a direct call measures. */
  readonly means: string;
  /** The relay parses nothing: its caller sends the agent's token itself. */
  readonly callerSendsToken: boolean;
  readonly start: (target: AgentTarget) => Promise<Listening>;
}

export const REFERENCES: readonly Reference[] = [
  {
    role: 'proxy',
    label: 'trivial proxy',
    means: 'one naive HTTP hop',
    callerSendsToken: false,
    start: startTrivialProxy,
  },
  {
    role: 'pipe',
    label: 'tcp pipe',
    means: 'floor of any hop',
    callerSendsToken: true,
    start: startTcpPipe,
  },
  {
    role: 'floor-raw',
    label: 'raw HTTP floor',
    means: 'floor of any Node HTTP hop',
    callerSendsToken: false,
    start: (t) => startHttpFloor(t, 'raw'),
  },
  {
    role: 'floor-node-http',
    label: 'node:http floor',
    means: 'floor of any gateway on node:http',
    callerSendsToken: false,
    start: (t) => startHttpFloor(t, 'node-http'),
  },
  {
    role: 'floor-fastify',
    label: 'fastify floor',
    means: 'floor of any gateway on fastify',
    callerSendsToken: false,
    start: (t) => startHttpFloor(t, 'fastify'),
  },
];

/** The reference a child process is asked to serve. */
export function referenceByRole(role: string): Reference | undefined {
  return REFERENCES.find((r) => r.role === role);
}
