/**
 * The agent's problem vocabulary: every `type` slug it answers with, its HTTP status and title.
 * Problem bodies are RFC 9457 `application/problem+json` `{type, title, status, detail}` with
 * `type` = PROBLEM_BASE + slug (schema: agentProblemSchema). Clients switch on the slug, never on
 * the detail text. Slugs are stable: add new ones, never rename or reuse one.
 */
import { PROBLEM_BASE } from '../constants.js';

/** Slug -> status and title of every problem the agent answers with. */
export const AGENT_PROBLEMS = {
  /** No or wrong bearer token (with `WWW-Authenticate: Bearer`). */
  unauthorized: { status: 401, title: 'Unauthorized' },
  /** Malformed JSON, a wrong type, an out-of-range value or an unknown field; the detail names it. */
  'invalid-request': { status: 400, title: 'Invalid request' },
  /** A body (or the decoded stdin of an exec) over its limit. */
  'payload-too-large': { status: 413, title: 'Payload too large' },
  /** A file path outside the workspace (`..`, absolute, a symlink leaving it). */
  'path-forbidden': { status: 403, title: 'Path forbidden' },
  /** An unknown route, or a file that does not exist. */
  'not-found': { status: 404, title: 'Not found' },
  /** bash is restarting, the agent is shutting down, or the command queue is full (Retry-After: 1). */
  'shell-unavailable': { status: 503, title: 'Shell unavailable' },
  /** Only from /livez: the agent is wedged and should be restarted (the kubelet does). */
  'agent-stalled': { status: 503, title: 'Agent stalled' },
  /** No background process has this id (never started, removed, or the Pod restarted). */
  'process-not-found': { status: 404, title: 'Process not found' },
  /** The signal is not in the allow-list (PROCESS_SIGNALS); the detail lists it. */
  'signal-not-allowed': { status: 400, title: 'Signal not allowed' },
  /** The process is still running: removing it needs a signal and an exit first. */
  'process-running': { status: 409, title: 'Process running' },
  /** The process has exited: it cannot be signalled any more. */
  'process-exited': { status: 409, title: 'Process exited' },
  /** The agent holds its maximum of processes (running or exited, not removed yet). */
  'too-many-processes': { status: 409, title: 'Too many processes' },
  /** The agent has its maximum of open terminals. */
  'too-many-terminals': { status: 409, title: 'Too many terminals' },
  /** The terminal helper is missing from this image: no PTY can be opened. */
  'pty-unavailable': { status: 503, title: 'Terminal unavailable' },
  /** A WebSocket-only route was called without an `Upgrade: websocket` request. */
  'upgrade-required': { status: 426, title: 'Upgrade required' },
  /** No kernel can run here (the image has no ipykernel, or it failed to start); the detail says why. */
  'code-unavailable': { status: 503, title: 'Code interpreter unavailable' },
  /** No code context has this name (never started, or removed). */
  'context-not-found': { status: 404, title: 'Context not found' },
  /** The agent holds its maximum of code contexts. */
  'too-many-contexts': { status: 409, title: 'Too many contexts' },
  /** The context's queue of waiting runs is full. */
  'context-busy': { status: 409, title: 'Context busy' },
  /** The agent holds its maximum of watches, or the file watcher helper is missing. */
  'watch-unavailable': { status: 503, title: 'Watch unavailable' },
  /** Another archive call (snapshot, restore or digest) is running: one at a time (docs/snapshots.md). */
  'archive-busy': { status: 409, title: 'Archive busy' },
  /** The archive of `PUT /v1/archive` is malformed (order, names, framing); the workspace is emptied. */
  'archive-invalid': { status: 400, title: 'Archive invalid' },
  /** The workspace written by `PUT /v1/archive` does not have the expected digest; it is emptied. */
  'digest-mismatch': { status: 422, title: 'Digest mismatch' },
  /** Unexpected failure; the detail says only "see the agent log", the cause is logged there. */
  internal: { status: 500, title: 'Internal error' },
} as const;

/** A slug of {@link AGENT_PROBLEMS}. */
export type AgentProblemSlug = keyof typeof AGENT_PROBLEMS;

/** The problem `type` URI of an agent slug. */
export function agentProblemType(slug: AgentProblemSlug): string {
  return PROBLEM_BASE + slug;
}

/** The slug of a problem `type` URI when it is one of the agent's, else undefined. */
export function agentProblemSlug(type: unknown): AgentProblemSlug | undefined {
  if (typeof type !== 'string' || !type.startsWith(PROBLEM_BASE)) return undefined;
  const slug = type.slice(PROBLEM_BASE.length);
  return Object.hasOwn(AGENT_PROBLEMS, slug) ? (slug as AgentProblemSlug) : undefined;
}
