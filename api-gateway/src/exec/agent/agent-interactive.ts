/**
 * What the interactive routes (background processes, the terminal, ports) need of the Agent
 * transport: its process calls, the agent's WebSocket (the terminal), and how to reach a
 * session's Pod directly for the port proxy (the current pod IP from the informer). One object
 * built by the composition root from the Agent transport, so the calls share its pool, token
 * cache, address lookup and tracing.
 */
import type WebSocket from 'ws';

import type { ExecTarget } from '../../sessions/model.js';
import type { TraceContext } from '../../tracing/tracing-config.js';
import { AgentCode, type CodeTransport } from './agent-code.js';
import { AgentProcesses, type ProcessTransport } from './agent-processes.js';
import { AgentWatch, type WatchTransport } from './agent-watch.js';
import type { AgentTransport } from './agent-transport.js';
import { dialWebSocket, type DialOptions } from '../relay/ws-dial.js';

/** The session-facing parts of the Agent transport that are not exec or files. */
export class AgentInteractive {
  readonly processes: ProcessTransport;
  /** The code interpreter's calls (ADR 0033). */
  readonly code: CodeTransport;
  /** File watching (ADR 0033). */
  readonly watch: WatchTransport;

  constructor(private readonly agent: AgentTransport) {
    this.processes = new AgentProcesses(agent);
    this.code = new AgentCode(agent);
    this.watch = new AgentWatch(agent);
  }

  /** `<ip>:<agent port>` (IPv6 in brackets) of the session's agent, as the transport dials it. */
  agentAddress(target: ExecTarget): string {
    return this.agent.address(target);
  }

  /** The bearer token the session's agent accepts (derived; never logged, never sent elsewhere). */
  agentToken(target: ExecTarget): string {
    return this.agent.token(target);
  }

  /**
   * Opens a WebSocket to the session's agent at `path` (`opts.search`: the query, without `?`),
   * with the session's token. Under a request's trace context (tracing on) the dial is an
   * `agent GET <path>` span, a child of the request's, until the socket is open or refused, and
   * sends its traceparent, as every agent call does. Rejects as dialWebSocket does.
   */
  async dialAgent(
    target: ExecTarget,
    path: string,
    opts: Pick<DialOptions, 'timeoutMs' | 'maxPayload'> & { search?: string },
    trace?: TraceContext,
  ): Promise<WebSocket> {
    const { search, ...dial } = opts;
    const url = `ws://${this.agentAddress(target)}${path}${search ? `?${search}` : ''}`;
    const authorization = `Bearer ${this.agentToken(target)}`;
    const { socket } = await this.agent.traced(trace, 'GET', path, async (traceparent) => ({
      status: 101,
      headers: {},
      socket: await dialWebSocket(url, {
        ...dial,
        headers: traceparent ? { authorization, traceparent } : { authorization },
      }),
    }));
    return socket;
  }

  /** The pod IP to dial for a port of the session (the informer's current one). */
  podIP(target: ExecTarget): string {
    const address = this.agent.address(target);
    const ip = address.slice(0, address.lastIndexOf(':'));
    return ip.startsWith('[') ? ip.slice(1, -1) : ip;
  }
}
