/**
 * RFC 9457 problem details, the agent's only error shape: `{type, title, status, detail}` with
 * `type` = https://sandbox.dev/problems/<slug>. Details never echo the token or command output.
 */
import type { ServerResponse } from 'node:http';

import { PROBLEM_BASE } from '@sandbox-platform/api';

/** Problem slugs of the agent API (docs/architecture.md) and their status and title. */
export const PROBLEMS = {
  unauthorized: { status: 401, title: 'Unauthorized' },
  'invalid-request': { status: 400, title: 'Invalid request' },
  'payload-too-large': { status: 413, title: 'Payload too large' },
  'path-forbidden': { status: 403, title: 'Path forbidden' },
  'not-found': { status: 404, title: 'Not found' },
  'shell-unavailable': { status: 503, title: 'Shell unavailable' },
  /** Only from /livez: the agent is wedged and should be restarted (the kubelet does). */
  'agent-stalled': { status: 503, title: 'Agent stalled' },
  internal: { status: 500, title: 'Internal error' },
} as const;

/** A problem slug. */
export type ProblemSlug = keyof typeof PROBLEMS;

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

/** Writes a problem response (when headers were not sent yet). */
export function sendProblem(res: ServerResponse, problem: HttpProblem): void {
  const { status, title } = PROBLEMS[problem.slug];
  const body = JSON.stringify({ type: PROBLEM_BASE + problem.slug, title, status, detail: problem.detail });
  const headers: Record<string, string | number> = {
    'content-type': 'application/problem+json',
    'content-length': Buffer.byteLength(body),
  };
  if (status === 401) headers['www-authenticate'] = 'Bearer';
  res.writeHead(status, headers).end(body);
}

/** Writes a JSON response. */
export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  const body = JSON.stringify(value);
  res
    .writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) })
    .end(body);
}
