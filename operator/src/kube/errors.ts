/**
 * API errors, normalized. client-node 1.4 throws ApiException with `code` and a JSON `body`; the
 * adapters in kube/ turn the cases the controller acts on into typed errors, so the controller never
 * inspects HTTP details.
 */

/** The object changed since it was read (409 Conflict on a precondition or resourceVersion). */
export class ConflictError extends Error {
  override readonly name = 'ConflictError';
}

/** Create failed because an object of that name exists (409 AlreadyExists). */
export class AlreadyExistsError extends Error {
  override readonly name = 'AlreadyExistsError';
}

/**
 * A ResourceQuota of the namespace refused a create (403: over a limit, or the object lacks a
 * request or limit the quota constrains). `quotaMessage` is the API server's message: it names the
 * quota and the resources, never object contents.
 */
export class QuotaRefusedError extends Error {
  override readonly name = 'QuotaRefusedError';

  constructor(
    readonly kind: 'Pod' | 'Secret' | 'PersistentVolumeClaim',
    readonly objectName: string,
    readonly quotaMessage: string,
    options?: { cause?: unknown },
  ) {
    super(`${kind} ${objectName} was refused by a ResourceQuota: ${quotaMessage}`, options);
  }
}

/** True for QuotaRefusedError. */
export function isQuotaRefused(err: unknown): err is QuotaRefusedError {
  return err instanceof QuotaRefusedError;
}

/** The quota admission's refusal: `... is forbidden: exceeded quota: ...` or `... failed quota: ...`. */
const QUOTA_REFUSAL = /\bforbidden: (exceeded|failed) quota: /;
/** Longest quota message kept (it ends up in the session's status). */
const MAX_QUOTA_MESSAGE = 1024;

/** The API server's message when `err` is a ResourceQuota refusal (403), else undefined. */
export function quotaRefusal(err: unknown): string | undefined {
  const info = apiErrorInfo(err);
  if (info.code !== 403 || !info.message || !QUOTA_REFUSAL.test(info.message)) return undefined;
  return info.message.slice(0, MAX_QUOTA_MESSAGE);
}

/** True for ConflictError. */
export function isConflict(err: unknown): err is ConflictError {
  return err instanceof ConflictError;
}

/** True for AlreadyExistsError. */
export function isAlreadyExists(err: unknown): err is AlreadyExistsError {
  return err instanceof AlreadyExistsError;
}

/** HTTP status code, Status reason and message of an API error, when it has them. */
export interface ApiErrorInfo {
  readonly code?: number;
  readonly reason?: string;
  readonly message?: string;
}

/** Extracts code, reason and message from a client-node ApiException (or anything else). */
export function apiErrorInfo(err: unknown): ApiErrorInfo {
  if (typeof err !== 'object' || err === null) return {};
  const e = err as { code?: unknown; statusCode?: unknown; body?: unknown };
  const code =
    typeof e.code === 'number' ? e.code : typeof e.statusCode === 'number' ? e.statusCode : undefined;
  const status = parseStatusBody(e.body);
  return { code, reason: status.reason, message: status.message };
}

function parseStatusBody(body: unknown): { reason?: string; message?: string } {
  let value: unknown = body;
  if (typeof body === 'string') {
    try {
      value = JSON.parse(body);
    } catch {
      // Not a Status object (e.g. a proxy's HTML error page): no reason to extract.
      return {};
    }
  }
  if (typeof value !== 'object' || value === null) return {};
  const v = value as { reason?: unknown; message?: unknown };
  return {
    reason: typeof v.reason === 'string' ? v.reason : undefined,
    message: typeof v.message === 'string' ? v.message : undefined,
  };
}

/** True when the API answered 404. */
export function isNotFound(err: unknown): boolean {
  return apiErrorInfo(err).code === 404;
}

/** True when the API answered 409. */
export function is409(err: unknown): boolean {
  return apiErrorInfo(err).code === 409;
}
