/**
 * The one module that owns the gateway's error vocabulary: every error a route can answer with is a
 * ProblemError carrying a stable problem type (RFC 9457). The error handler (plugins/errors.ts)
 * turns them into application/problem+json; docs/gateway.md lists the same table for users.
 */
import { PROBLEM_BASE } from '@sandbox-platform/api';

/** Base of every problem `type` URI (the agent's too). */
export { PROBLEM_BASE };

/** Every problem the gateway answers with: slug -> HTTP status and a stable title. */
export const PROBLEMS = {
  'invalid-request': { status: 400, title: 'The request is malformed or fails validation' },
  unauthorized: { status: 401, title: 'A valid API key is required' },
  forbidden: { status: 403, title: 'This API key may not use that namespace' },
  'path-forbidden': { status: 403, title: 'The path leaves the sandbox workspace' },
  'session-not-found': { status: 404, title: 'No such session' },
  'snapshot-not-found': { status: 404, title: 'No such snapshot' },
  'not-found': { status: 404, title: 'No such resource' },
  'method-not-allowed': { status: 405, title: 'Method not allowed' },
  conflict: { status: 409, title: 'The session exists with a different spec or is being deleted' },
  // Background processes and the terminal: the agent's slugs, passed through (ADR 0018).
  'process-not-found': { status: 404, title: 'No background process has this id' },
  'signal-not-allowed': { status: 400, title: 'The signal is not in the allow-list' },
  'process-running': { status: 409, title: 'The process is still running' },
  'process-exited': { status: 409, title: 'The process has exited' },
  'too-many-processes': { status: 409, title: 'The sandbox holds its maximum of processes' },
  'too-many-terminals': { status: 409, title: 'The sandbox has its maximum of open terminals' },
  'pty-unavailable': { status: 503, title: 'The sandbox image has no terminal helper' },
  // The code interpreter and file watching: the agent's slugs, passed through (ADR 0033).
  'code-unavailable': { status: 503, title: 'No code kernel can run in this sandbox' },
  'context-not-found': { status: 404, title: 'No code context has this name' },
  'too-many-contexts': { status: 409, title: 'The sandbox holds its maximum of code contexts' },
  'context-busy': { status: 409, title: 'The code context has its maximum of waiting runs' },
  'watch-unavailable': { status: 503, title: 'The sandbox cannot watch files now' },
  'port-forbidden': { status: 403, title: 'This port of the sandbox is not proxied by the gateway' },
  'origin-forbidden': { status: 403, title: 'WebSocket upgrades from this Origin are not allowed' },
  'preview-unauthorized': {
    status: 401,
    title: 'A valid preview link or cookie for this origin is required',
  },
  'upgrade-required': { status: 426, title: 'This route needs a WebSocket upgrade' },
  'session-gone': { status: 410, title: 'The session was deleted or collected' },
  'quota-exceeded': { status: 403, title: 'A quota of this API key or namespace is used up' },
  'payload-too-large': { status: 413, title: 'The request body is too large' },
  'unsupported-media-type': { status: 415, title: 'Unsupported content type' },
  'policy-violation': { status: 422, title: 'The request is not allowed by the gateway policy' },
  'rate-limited': { status: 429, title: 'Too many requests for this API key; retry later' },
  'concurrency-limited': { status: 429, title: 'Too many requests of this API key in flight; retry later' },
  internal: { status: 500, title: 'Internal error' },
  'not-supported': { status: 501, title: 'Not supported by this session transport' },
  'upstream-error': { status: 502, title: 'The sandbox could not be reached or answered with an error' },
  'agent-answer-too-large': { status: 502, title: "The sandbox agent's answer exceeds the gateway's limit" },
  'agent-protocol-error': { status: 502, title: 'The sandbox agent answered outside its protocol' },
  'session-not-ready': { status: 503, title: 'The session is not ready yet' },
  'pod-identity-unverified': {
    status: 503,
    title: "The Pod named in the session's status cannot be tied to the session; nothing was dialed",
  },
  'shell-unavailable': { status: 503, title: 'The sandbox shell is restarting' },
  'gateway-not-ready': { status: 503, title: 'The gateway has not synced its session cache yet' },
  'kubernetes-unavailable': { status: 503, title: 'The Kubernetes API server did not answer; retry later' },
  overloaded: { status: 503, title: 'The gateway is overloaded; retry later' },
  'upstream-timeout': { status: 504, title: 'The sandbox did not answer within the deadline' },
} as const;

/** A stable problem slug. */
export type ProblemSlug = keyof typeof PROBLEMS;

/** The RFC 9457 body the gateway writes (plus optional extension members). */
export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail?: string;
  [extension: string]: unknown;
}

/** Options of a ProblemError beyond its slug and detail. */
export interface ProblemOptions {
  /** Seconds for a Retry-After header (503, 409 while terminating). */
  retryAfterSeconds?: number;
  /** Extension members added to the body (e.g. reason of a 410). Never secrets. */
  extensions?: Record<string, unknown>;
  /** The underlying error, for logs only: never sent to the client. */
  cause?: unknown;
}

/** An error that maps to one problem type. `detail` is sent to the client: keep it free of secrets. */
export class ProblemError extends Error {
  readonly slug: ProblemSlug;
  readonly status: number;
  readonly detail: string | undefined;
  readonly retryAfterSeconds: number | undefined;
  readonly extensions: Record<string, unknown>;

  constructor(slug: ProblemSlug, detail?: string, opts: ProblemOptions = {}) {
    super(detail ?? PROBLEMS[slug].title, { cause: opts.cause });
    this.name = 'ProblemError';
    this.slug = slug;
    this.status = PROBLEMS[slug].status;
    this.detail = detail;
    this.retryAfterSeconds = opts.retryAfterSeconds;
    this.extensions = opts.extensions ?? {};
  }

  /** The problem+json body of this error. */
  toBody(): ProblemBody {
    return problemBody(this.slug, this.detail, this.extensions);
  }
}

/** Builds a problem body for a slug. */
export function problemBody(
  slug: ProblemSlug,
  detail?: string,
  extensions: Record<string, unknown> = {},
): ProblemBody {
  const { status, title } = PROBLEMS[slug];
  const body: ProblemBody = { ...extensions, type: PROBLEM_BASE + slug, title, status };
  if (detail !== undefined) body.detail = detail;
  return body;
}

/** True for a ProblemError (also across module copies, by shape). */
export function isProblemError(err: unknown): err is ProblemError {
  return err instanceof ProblemError;
}

/**
 * The gateway's own caller went away while its call to the sandbox was in flight: it disconnected,
 * or its request body broke off (a reset, node's request timeout, which has answered 408 itself).
 * Not a ProblemError: nobody is left to answer, and it is neither the sandbox's failure nor the
 * gateway's. The error handler closes the request without an answer and logs it at debug.
 */
export class CallerGoneError extends Error {
  constructor(cause?: unknown) {
    super('the caller went away before its answer', { cause });
    this.name = 'CallerGoneError';
  }
}

/** True for a CallerGoneError. */
export function isCallerGone(err: unknown): err is CallerGoneError {
  return err instanceof CallerGoneError;
}

/** The slug of a problem type URI, when it is one of ours. */
export function slugOfType(type: unknown): ProblemSlug | undefined {
  if (typeof type !== 'string' || !type.startsWith(PROBLEM_BASE)) return undefined;
  const slug = type.slice(PROBLEM_BASE.length);
  return slug in PROBLEMS ? (slug as ProblemSlug) : undefined;
}
