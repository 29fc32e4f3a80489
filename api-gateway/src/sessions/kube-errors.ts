/** Reading client-node's ApiException without depending on its class identity. */
import { ProblemError, type ProblemBody, type ProblemOptions } from '../errors.js';

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

/**
 * How the API server words an admission refusal (k8s.io/apiserver, policy/validating/dispatcher.go
 * and the webhook admission plugin): "<resource> \"<name>\" is forbidden: ValidatingAdmissionPolicy
 * '<policy>' with binding '<binding>' denied request: <the policy's message>", or "admission
 * webhook \"<webhook>\" denied the request: <message>". An RBAC refusal ("User ... cannot create
 * resource ...") and a ResourceQuota's ("exceeded quota") never say this.
 */
const POLICY_DENIAL = /ValidatingAdmissionPolicy '([^']+)' with binding '([^']+)' denied request: ([\s\S]+)$/;
const WEBHOOK_DENIAL = /admission webhook "([^"]+)" denied the request: ([\s\S]+)$/;

/** An admission policy's refusal of a request: which policy, and its message. */
export interface AdmissionRefusal {
  /** The ValidatingAdmissionPolicy's or the webhook's name. */
  policy: string;
  /** What the policy said (names the rule and the fix, for the platform's sandbox policy). */
  message: string;
}

/** The admission refusal an API server message reports, if it reports one. */
export function admissionRefusal(message: string | undefined): AdmissionRefusal | undefined {
  if (message === undefined) return undefined;
  const vap = POLICY_DENIAL.exec(message);
  if (vap) return { policy: vap[1]!, message: vap[3]!.trim() };
  const hook = WEBHOOK_DENIAL.exec(message);
  return hook ? { policy: hook[1]!, message: hook[2]!.trim() } : undefined;
}

/**
 * policy-violation with the API server's own status: 403 for the platform's sandbox policy (its
 * rules say `reason: Forbidden`; charts/sandbox-platform/templates/sandbox-policy.yaml), 422 for a
 * policy that gives no reason. The gateway's own policy refusals (policy.ts) keep the slug's 422.
 */
class PolicyRefusal extends ProblemError {
  override readonly status: number;

  constructor(status: number, detail: string, opts: ProblemOptions) {
    super('policy-violation', detail, opts);
    this.status = status;
  }

  override toBody(): ProblemBody {
    return { ...super.toBody(), status: this.status };
  }
}

/** Seconds a caller is told to wait when the API server did not answer. */
const UNAVAILABLE_RETRY_AFTER_SECONDS = 2;

/** API server answers that mean "not now" rather than "not this": retried by a careful client. */
const UNAVAILABLE_STATUSES = new Set([429, 500, 502, 503, 504]);

/**
 * The problem a failed REST call becomes:
 * - 403 or 422 from an admission policy (the platform's sandbox policy: image, runtime class, node
 *   selector, tolerations, sizes; docs/adr/0028): policy-violation with that status and the
 *   policy's message, which names the rule and the fix, the same text kubectl shows;
 * - 400/422 otherwise (the CRD refused the spec): the caller's, with the API server's message (it
 *   is about the request);
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
  const refused = policyRefusal(status, message, err) ?? callerProblem(status, message, action, err);
  if (refused) return refused;
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

/** A refusal caused by the caller's request (invalid, conflicting, over quota), else undefined. */
function callerProblem(
  status: number | undefined,
  message: string | undefined,
  action: string,
  err: unknown,
): ProblemError | undefined {
  if (status === 422 || status === 400) {
    return new ProblemError('invalid-request', message ?? 'the API server refused the session spec', {
      cause: err,
    });
  }
  if (status === 409) {
    // AlreadyExists or a write conflict: the caller's request meets the state of the moment (a
    // snapshot name taken, a concurrent change), not a gateway fault.
    return new ProblemError('conflict', `${action}: ${message ?? 'the object exists or changed meanwhile'}`, {
      cause: err,
    });
  }
  if (status === 403 && message?.includes('exceeded quota')) {
    return new ProblemError('quota-exceeded', message, {
      cause: err,
      extensions: { quota: 'resourcequota' },
    });
  }
  return undefined;
}

/** The policy-violation of a 403 or 422 that an admission policy gave, else undefined. */
function policyRefusal(
  status: number | undefined,
  message: string | undefined,
  err: unknown,
): Error | undefined {
  if (status !== 403 && status !== 422) return undefined;
  const refusal = admissionRefusal(message);
  if (!refusal) return undefined;
  return new PolicyRefusal(status, refusal.message, { cause: err, extensions: { policy: refusal.policy } });
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
