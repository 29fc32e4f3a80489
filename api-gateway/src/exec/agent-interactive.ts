/**
 * What the interactive routes (background processes, the terminal, ports) need of the Agent
 * transport: its process calls, and how to reach a session's agent or Pod directly for the
 * WebSocket and HTTP proxies (the current pod IP from the informer, the session's derived token).
 * One object built by the composition root from the Agent transport, so the calls share its pool,
 * token cache and address lookup.
 */
import type { ExecTarget } from '../sessions/model.js';
import { AgentProcesses, type ProcessTransport } from './agent-processes.js';
import type { AgentTransport } from './agent-transport.js';

/** The session-facing parts of the Agent transport that are not exec or files. */
export class AgentInteractive {
  readonly processes: ProcessTransport;

  constructor(private readonly agent: AgentTransport) {
    this.processes = new AgentProcesses(agent);
  }

  /** `<ip>:<agent port>` (IPv6 in brackets) of the session's agent, as the transport dials it. */
  agentAddress(target: ExecTarget): string {
    return this.agent.address(target);
  }

  /** The bearer token the session's agent accepts (derived; never logged, never sent elsewhere). */
  agentToken(target: ExecTarget): string {
    return this.agent.token(target);
  }

  /** The pod IP to dial for a port of the session (the informer's current one). */
  podIP(target: ExecTarget): string {
    const address = this.agent.address(target);
    const ip = address.slice(0, address.lastIndexOf(':'));
    return ip.startsWith('[') ? ip.slice(1, -1) : ip;
  }
}
