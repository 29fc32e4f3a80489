/**
 * Errors of the envd API in the forms the E2B SDKs read. The gateway's own failures are
 * ProblemErrors (errors.ts); here they become Connect errors (process and filesystem RPCs) or
 * envd's `{code, message}` JSON (the /files and /health routes), with the code the SDKs turn into
 * their documented error classes (docs/e2b.md, "Errors"):
 *
 *   InvalidArgument -> InvalidArgumentError   NotFound -> NotFoundError / FileNotFoundError
 *   Unauthenticated -> AuthenticationError    ResourceExhausted -> RateLimitError
 *   Unavailable -> TimeoutError (the sandbox is not running)   DeadlineExceeded -> TimeoutError
 */
import { Code, ConnectError } from '@connectrpc/connect';

import type { ProblemError, ProblemSlug } from '../../errors.js';
import { toProblem } from '../../plugins/errors.js';

/** The Connect code of each problem the envd handlers can meet. */
const CODES: Partial<Record<ProblemSlug, Code>> = {
  'invalid-request': Code.InvalidArgument,
  'path-forbidden': Code.InvalidArgument,
  'payload-too-large': Code.InvalidArgument,
  'signal-not-allowed': Code.InvalidArgument,
  'unsupported-media-type': Code.InvalidArgument,
  unauthorized: Code.Unauthenticated,
  forbidden: Code.PermissionDenied,
  'not-found': Code.NotFound,
  'process-not-found': Code.NotFound,
  'process-exited': Code.NotFound,
  'process-running': Code.FailedPrecondition,
  'too-many-processes': Code.FailedPrecondition,
  'too-many-terminals': Code.FailedPrecondition,
  conflict: Code.AlreadyExists,
  'rate-limited': Code.ResourceExhausted,
  'concurrency-limited': Code.ResourceExhausted,
  'not-supported': Code.Unimplemented,
  'method-not-allowed': Code.Unimplemented,
  'upstream-timeout': Code.DeadlineExceeded,
  'agent-protocol-error': Code.Internal,
  'agent-answer-too-large': Code.Internal,
  internal: Code.Internal,
};

/** HTTP statuses of Connect codes in unary error answers (the Connect protocol's table). */
const HTTP_STATUS: Record<Code, number> = {
  [Code.Canceled]: 499,
  [Code.Unknown]: 500,
  [Code.InvalidArgument]: 400,
  [Code.DeadlineExceeded]: 504,
  [Code.NotFound]: 404,
  [Code.AlreadyExists]: 409,
  [Code.PermissionDenied]: 403,
  [Code.ResourceExhausted]: 429,
  [Code.FailedPrecondition]: 400,
  [Code.Aborted]: 409,
  [Code.OutOfRange]: 400,
  [Code.Unimplemented]: 501,
  [Code.Internal]: 500,
  [Code.Unavailable]: 503,
  [Code.DataLoss]: 500,
  [Code.Unauthenticated]: 401,
};

/** The Connect code of a problem (sessions not ready, gone or unreachable: Unavailable). */
export function codeOf(problem: ProblemError): Code {
  return CODES[problem.slug] ?? Code.Unavailable;
}

/** True for the bridge's "no such sandbox" (answered 502, as E2B's proxy does). */
export function isSandboxNotFound(problem: ProblemError): boolean {
  return problem.extensions.e2b === 'sandbox-not-found';
}

/** A problem as a ConnectError (thrown by RPC handlers; connect writes it). */
export function toConnectError(err: unknown): ConnectError {
  if (err instanceof ConnectError) return err;
  const problem = toProblem(err);
  return new ConnectError(publicMessage(problem), codeOf(problem), undefined, undefined, err);
}

/** The message a caller may see: a 500's detail stays in the log. */
export function publicMessage(problem: ProblemError): string {
  return problem.slug === 'internal' ? 'internal error' : problem.message;
}

/** A unary Connect error answer (status and JSON body) for a failure before the handler ran. */
export function connectErrorAnswer(problem: ProblemError): { status: number; body: object } {
  const code = codeOf(problem);
  const status = isSandboxNotFound(problem) ? 502 : HTTP_STATUS[code];
  return { status, body: { code: codeName(code), message: publicMessage(problem) } };
}

/**
 * A Connect streaming error answer for a failure before the handler ran: HTTP 200 and one
 * end-of-stream envelope holding the error (flags 0x02, then the JSON `{error: {code, message}}`),
 * in the request's content type. Connect clients read the code of a streaming call only from
 * there: to them any other status is a bare HTTP error (400 reads as Internal).
 */
export function connectStreamErrorAnswer(problem: ProblemError): Buffer {
  const json = Buffer.from(
    JSON.stringify({ error: { code: codeName(codeOf(problem)), message: publicMessage(problem) } }),
  );
  const envelope = Buffer.alloc(5 + json.length);
  envelope[0] = 0b10;
  envelope.writeUInt32BE(json.length, 1);
  json.copy(envelope, 5);
  return envelope;
}

/** envd's HTTP error answer (`{code, message}`, code being the HTTP status). */
export function envdHttpErrorAnswer(problem: ProblemError): { status: number; body: object } {
  const code = codeOf(problem);
  const status = isSandboxNotFound(problem) ? 502 : httpStatusOf(problem, code);
  return { status, body: { code: status, message: publicMessage(problem) } };
}

function httpStatusOf(problem: ProblemError, code: Code): number {
  if (problem.slug === 'not-found') return 404;
  if (code === Code.Unavailable) return 503;
  return HTTP_STATUS[code];
}

/** The Connect protocol's name of a code (snake case, e.g. `invalid_argument`). */
export function codeName(code: Code): string {
  return Code[code].replace(/([a-z])([A-Z])/g, '$1_$2').toLowerCase();
}

/** Runs a unary handler; its failures become Connect errors (thrown synchronously or not). */
export async function guarded<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    throw toConnectError(err);
  }
}

/** Runs a streaming handler; its failures become Connect errors. */
export async function* guardedStream<T>(run: () => AsyncGenerator<T>): AsyncGenerator<T> {
  try {
    yield* run();
  } catch (err) {
    throw toConnectError(err);
  }
}
