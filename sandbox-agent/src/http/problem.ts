/**
 * RFC 9457 problem details, the agent's only error shape: `{type, title, status, detail}` with
 * `type` = https://sandbox.dev/problems/<slug>. Details never echo the token or command output.
 */
import type { ServerResponse } from 'node:http';

import { AGENT_PROBLEMS, type AgentProblemSlug, PROBLEM_BASE } from '@sandbox-platform/api';

/**
 * Problem slugs of the agent API with their status and title: the shared contract's table
 * (AGENT_PROBLEMS in @sandbox-platform/api), so the gateway reads the same vocabulary.
 */
export const PROBLEMS = AGENT_PROBLEMS;

/** A problem slug. */
export type ProblemSlug = AgentProblemSlug;

/** Base of every problem `type` URI (the gateway's too). */
export { PROBLEM_BASE };

/** A failure with a known HTTP mapping; thrown by handlers, rendered by the server. */
export class HttpProblem extends Error {
  override readonly name = 'HttpProblem';

  constructor(
    readonly slug: ProblemSlug,
    readonly detail: string,
    options?: ErrorOptions,
  ) {
    super(`${slug}: ${detail}`, options);
  }

  /** The HTTP status of the slug. */
  get status(): number {
    return PROBLEMS[this.slug].status;
  }
}

/** The problem+json body of a problem. */
function problemBody(problem: HttpProblem): string {
  const { status, title } = PROBLEMS[problem.slug];
  return JSON.stringify({ type: PROBLEM_BASE + problem.slug, title, status, detail: problem.detail });
}

/**
 * A whole HTTP/1.1 response carrying the problem, for a socket taken over from the HTTP server
 * (a refused WebSocket upgrade); the connection closes after it.
 */
export function problemResponseText(problem: HttpProblem): string {
  const { status, title } = PROBLEMS[problem.slug];
  const body = problemBody(problem);
  const extra = status === 401 ? 'WWW-Authenticate: Bearer\r\n' : status === 503 ? 'Retry-After: 1\r\n' : '';
  return (
    `HTTP/1.1 ${status} ${title}\r\nContent-Type: application/problem+json\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\n${extra}Connection: close\r\n\r\n${body}`
  );
}

/** Writes a problem response (when headers were not sent yet). */
export function sendProblem(res: ServerResponse, problem: HttpProblem): void {
  const { status } = PROBLEMS[problem.slug];
  const body = problemBody(problem);
  const headers: Record<string, string | number> = {
    'content-type': 'application/problem+json',
    'content-length': Buffer.byteLength(body),
  };
  if (status === 401) headers['www-authenticate'] = 'Bearer';
  if (status === 426) headers.upgrade = 'websocket';
  res.writeHead(status, headers).end(body);
}

/** Writes a JSON response. */
export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  const body = JSON.stringify(value);
  res
    .writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) })
    .end(body);
}
