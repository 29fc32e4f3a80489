/**
 * Typed errors. Every failure the client throws is a SandboxError with a stable `code`:
 *
 * - a non-2xx answer of the gateway is a GatewayError whose `code` is the problem's slug
 *   (docs/gateway.md, "Errors"), raised as the subclass of its family so callers can catch a
 *   family (`NotFoundError`) or switch on `code` ('session-not-found');
 * - the gateway could not be reached: ConnectionError (`connection-failed`);
 * - the client's own deadline passed: TimeoutError (`timeout`);
 * - the answer was not what the API documents (bad JSON, an oversized body, a stream that ended
 *   without its exit event): ProtocolError (`protocol-error`).
 */
import type { Problem } from './types.js';

/** The problem slugs the gateway answers with (docs/gateway.md, "Errors"). */
export type ProblemCode =
  | 'invalid-request'
  | 'unauthorized'
  | 'forbidden'
  | 'path-forbidden'
  | 'session-not-found'
  | 'not-found'
  | 'method-not-allowed'
  | 'conflict'
  | 'session-gone'
  | 'quota-exceeded'
  | 'payload-too-large'
  | 'unsupported-media-type'
  | 'policy-violation'
  | 'rate-limited'
  | 'concurrency-limited'
  | 'internal'
  | 'not-supported'
  | 'upstream-error'
  | 'agent-answer-too-large'
  | 'agent-protocol-error'
  | 'session-not-ready'
  | 'shell-unavailable'
  | 'gateway-not-ready'
  | 'kubernetes-unavailable'
  | 'overloaded'
  | 'upstream-timeout';

/** Codes of failures that are not a gateway answer. */
export type ClientErrorCode = 'connection-failed' | 'timeout' | 'protocol-error';

/** Every `code` a SandboxError may carry; unknown slugs of a newer gateway pass through as strings. */
export type ErrorCode = ProblemCode | ClientErrorCode | (string & NonNullable<unknown>);

/** Base of every error this package throws. */
export class SandboxError extends Error {
  /** Stable machine-readable code: a problem slug or a ClientErrorCode. */
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SandboxError';
    this.code = code;
  }
}

/** The gateway could not be reached (refused, reset, DNS): nothing or not all of the request arrived. */
export class ConnectionError extends SandboxError {
  /** The URL that was called. */
  readonly url: string;

  constructor(url: string, detail: string, options?: { cause?: unknown }) {
    super('connection-failed', `cannot reach the gateway at ${url}: ${detail}`, options);
    this.name = 'ConnectionError';
    this.url = url;
  }
}

/** The call did not finish within the client's deadline (`timeoutMs`, or a waitUntilReady timeout). */
export class TimeoutError extends SandboxError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('timeout', message, options);
    this.name = 'TimeoutError';
  }
}

/** The gateway's answer broke the documented protocol. */
export class ProtocolError extends SandboxError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('protocol-error', message, options);
    this.name = 'ProtocolError';
  }
}

/** A non-2xx answer of the gateway, carrying its RFC 9457 problem. */
export class GatewayError extends SandboxError {
  readonly status: number;
  readonly problem: Problem;
  /** The slug of problem.type, e.g. "session-not-found" (the same as `code`). */
  readonly slug: string;
  /** Retry-After in seconds, when the gateway sent one (503, 409 while a session is deleted). */
  readonly retryAfterSeconds: number | undefined;

  constructor(status: number, problem: Problem, retryAfter: string | null) {
    const slug = slugOf(problem.type, status);
    super(slug, `${status} ${problem.title}${problem.detail ? `: ${problem.detail}` : ''}`);
    this.name = 'GatewayError';
    this.status = status;
    this.problem = problem;
    this.slug = slug;
    this.retryAfterSeconds = parseRetryAfter(retryAfter);
  }

  /** The problem's detail (or title): one human sentence. */
  get detail(): string {
    return this.problem.detail ?? this.problem.title;
  }

  /** The problem's `reason` member (e.g. ImagePullFailed on session-not-ready, Deleted on session-gone). */
  get reason(): string | undefined {
    return typeof this.problem.reason === 'string' ? this.problem.reason : undefined;
  }
}

/** 400 invalid-request, 405, 413 payload-too-large, 415 unsupported-media-type. */
export class InvalidRequestError extends GatewayError {
  override readonly name = 'InvalidRequestError';
}
/** 401 unauthorized: missing or wrong API key. */
export class AuthenticationError extends GatewayError {
  override readonly name = 'AuthenticationError';
}
/** 403 forbidden (namespace not allowed for the key), path-forbidden (path leaves the workspace), quota-exceeded. */
export class PermissionDeniedError extends GatewayError {
  override readonly name = 'PermissionDeniedError';
}
/** 404 session-not-found, or not-found (no such file or route). */
export class NotFoundError extends GatewayError {
  override readonly name = 'NotFoundError';
}
/** 409 conflict: the session exists with another spec, or is being deleted. */
export class ConflictError extends GatewayError {
  override readonly name = 'ConflictError';
}
/** 410 session-gone: deleted or collected (`reason`: Terminating, Deleted, IdleTimeout, LifetimeExceeded). */
export class SessionGoneError extends GatewayError {
  override readonly name = 'SessionGoneError';
}
/** 422 policy-violation: image, timeout or transport not allowed by the gateway. */
export class PolicyViolationError extends GatewayError {
  override readonly name = 'PolicyViolationError';
}
/** 429 rate-limited, concurrency-limited: too many calls of this API key; retry after `retryAfterSeconds`. */
export class RateLimitError extends GatewayError {
  override readonly name = 'RateLimitError';
}
/** 501 not-supported by the session's transport. */
export class NotSupportedError extends GatewayError {
  override readonly name = 'NotSupportedError';
}
/** 503 session-not-ready, shell-unavailable, gateway-not-ready, kubernetes-unavailable, overloaded: try again after `retryAfterSeconds`. */
export class UnavailableError extends GatewayError {
  override readonly name = 'UnavailableError';
}
/** 502 upstream-error, agent-answer-too-large, agent-protocol-error, 504 upstream-timeout: the sandbox could not be reached or answered badly or late. */
export class UpstreamError extends GatewayError {
  override readonly name = 'UpstreamError';
}
/** 500 internal, or another 5xx. */
export class InternalServerError extends GatewayError {
  override readonly name = 'InternalServerError';
}

type GatewayErrorClass = new (status: number, problem: Problem, retryAfter: string | null) => GatewayError;

const BY_SLUG: Record<ProblemCode, GatewayErrorClass> = {
  'invalid-request': InvalidRequestError,
  'method-not-allowed': InvalidRequestError,
  'payload-too-large': InvalidRequestError,
  'unsupported-media-type': InvalidRequestError,
  unauthorized: AuthenticationError,
  forbidden: PermissionDeniedError,
  'path-forbidden': PermissionDeniedError,
  'quota-exceeded': PermissionDeniedError,
  'rate-limited': RateLimitError,
  'concurrency-limited': RateLimitError,
  'session-not-found': NotFoundError,
  'not-found': NotFoundError,
  conflict: ConflictError,
  'session-gone': SessionGoneError,
  'policy-violation': PolicyViolationError,
  internal: InternalServerError,
  'not-supported': NotSupportedError,
  'upstream-error': UpstreamError,
  'agent-answer-too-large': UpstreamError,
  'agent-protocol-error': UpstreamError,
  'upstream-timeout': UpstreamError,
  'session-not-ready': UnavailableError,
  'shell-unavailable': UnavailableError,
  'gateway-not-ready': UnavailableError,
  'kubernetes-unavailable': UnavailableError,
  overloaded: UnavailableError,
};

/** Family by status, for answers without one of our slugs (e.g. from a proxy in front). */
const BY_STATUS: Record<number, GatewayErrorClass> = {
  400: InvalidRequestError,
  401: AuthenticationError,
  403: PermissionDeniedError,
  404: NotFoundError,
  405: InvalidRequestError,
  409: ConflictError,
  410: SessionGoneError,
  413: InvalidRequestError,
  415: InvalidRequestError,
  422: PolicyViolationError,
  429: RateLimitError,
  501: NotSupportedError,
  502: UpstreamError,
  503: UnavailableError,
  504: UpstreamError,
};

/** Base of the problem `type` URIs (docs/gateway.md). */
export const PROBLEM_TYPE_BASE = 'https://sandbox.dev/problems/';

/** The error of a problem answer, as the subclass of its family. */
export function errorFromProblem(status: number, problem: Problem, retryAfter: string | null): GatewayError {
  const slug = slugOf(problem.type, status);
  const cls =
    (BY_SLUG as Record<string, GatewayErrorClass | undefined>)[slug] ??
    BY_STATUS[status] ??
    (status >= 500 ? InternalServerError : GatewayError);
  return new cls(status, problem, retryAfter);
}

/** The last segment of a problem type URI; `http-<status>` for `about:blank` and empty types. */
function slugOf(type: string, status: number): string {
  if (!type || type === 'about:blank') return `http-${status}`;
  return type.split('/').pop() || `http-${status}`;
}

/** Retry-After as seconds: delta-seconds, or an HTTP date; undefined when absent or unreadable. */
function parseRetryAfter(value: string | null): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - Date.now()) / 1000));
}

/** True for any error of this package. */
export function isSandboxError(err: unknown): err is SandboxError {
  return err instanceof SandboxError;
}
