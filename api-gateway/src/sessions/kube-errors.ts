/** Reading client-node's ApiException without depending on its class identity. */
import { ProblemError } from '../errors.js';

/** HTTP status of a failed Kubernetes API call, if it was one. */
export function apiStatus(err: unknown): number | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const code = (err as { code?: unknown }).code;
  return typeof code === 'number' ? code : undefined;
}

/** The `message` of the Status object an API error carried (safe to show: it is about the request). */
export function apiMessage(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  let body = (err as { body?: unknown }).body;
  if (typeof body === 'string') {
    try {
      body = JSON.parse(body);
    } catch {
      return undefined;
    }
  }
  const message = (body as { message?: unknown } | undefined)?.message;
  return typeof message === 'string' ? message : undefined;
}

/** Seconds a caller is told to wait when the API server did not answer. */
const UNAVAILABLE_RETRY_AFTER_SECONDS = 2;

/** API server answers that mean "not now" rather than "not this": retried by a careful client. */
const UNAVAILABLE_STATUSES = new Set([429, 500, 502, 503, 504]);

/**
 * The problem a failed REST call becomes:
 * - 400/422 (the CRD or an admission policy refused the spec): the caller's, with the API
 *   server's message (it is about the request);
 * - 403 from a ResourceQuota ("exceeded quota"): quota-exceeded with that message;
 * - no answer at all (the deadline of kube-api.ts, a refused or reset connection) or a 429/5xx:
 *   503 kubernetes-unavailable with Retry-After, so a client retries instead of giving up on a
 *   500 while the API server restarts;
 * - anything else (e.g. the gateway's RBAC): a plain error, answered 500 internal and logged.
 * The underlying error is kept as the cause, for the log only.
 */
export function kubeFailure(err: unknown, action: string): Error {
  const status = apiStatus(err);
  const message = apiMessage(err);
  if (status === 422 || status === 400) {
    return new ProblemError('invalid-request', message ?? 'the API server refused the session spec', {
      cause: err,
    });
  }
  if (status === 403 && message?.includes('exceeded quota')) {
    return new ProblemError('quota-exceeded', message, {
      cause: err,
      extensions: { quota: 'resourcequota' },
    });
  }
  if (status === undefined || UNAVAILABLE_STATUSES.has(status)) {
    const what = status === undefined ? noAnswer(err) : `answered HTTP ${status}`;
    return new ProblemError(
      'kubernetes-unavailable',
      `${action}: the Kubernetes API server ${what}; retry shortly`,
      {
        retryAfterSeconds: UNAVAILABLE_RETRY_AFTER_SECONDS,
        cause: err,
      },
    );
  }
  return new Error(`${action}: Kubernetes API call failed (HTTP ${status})`, { cause: err });
}

/** Why a call got no HTTP answer, in words safe to show (no addresses). */
function noAnswer(err: unknown): string {
  const e = err as { name?: unknown; type?: unknown; code?: unknown } | null;
  if (e?.name === 'AbortError' || e?.type === 'aborted' || e?.name === 'TimeoutError') {
    return 'did not answer within the deadline';
  }
  if (typeof e?.code === 'string' && /^E[A-Z]+$/.test(e.code)) return `could not be reached (${e.code})`;
  return 'could not be reached';
}
