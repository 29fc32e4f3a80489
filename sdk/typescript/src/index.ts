/**
 * @sandbox-platform/client: the TypeScript client of the sandbox-platform gateway.
 *
 *   const sbx = new SandboxClient({ baseUrl, apiKey });
 *   const { session } = await sbx.createSession({ name: 'demo' });
 *   const r = await sbx.exec('demo', { command: 'echo hi' });
 *
 * See README.md for the full tour.
 */
export { GatewayClient, SandboxClient } from './client.js';
export type { CallOptions, GatewayClientOptions, SandboxClientOptions, WaitOptions } from './client.js';
export type { RetryOptions } from './http.js';
export {
  AuthenticationError,
  ConflictError,
  ConnectionError,
  GatewayError,
  InternalServerError,
  InvalidRequestError,
  NotFoundError,
  NotSupportedError,
  PermissionDeniedError,
  PolicyViolationError,
  PROBLEM_TYPE_BASE,
  ProtocolError,
  RateLimitError,
  SandboxError,
  SessionGoneError,
  TimeoutError,
  UnavailableError,
  UpstreamError,
  errorFromProblem,
  isSandboxError,
} from './errors.js';
export type { ClientErrorCode, ErrorCode, ProblemCode } from './errors.js';
export { decodeOutput, eventBytes, stderrBytes, stdoutBytes } from './encoding.js';
export type {
  CodeContext,
  CodeEvent,
  CodeOutput,
  CodeResult,
  CodeStatus,
  CreateSessionRequest,
  ExecExitEvent,
  ExecOutputEvent,
  ExecRequest,
  ExecResult,
  ExecStreamEvent,
  ExecStreamRequest,
  ExecTransport,
  OutputChunk,
  OutputCounters,
  OutputEncoding,
  Problem,
  ProcessExitEvent,
  ProcessFollowEvent,
  ProcessFollowQuery,
  ProcessInfo,
  ProcessOutput,
  ProcessOutputEvent,
  ProcessOutputQuery,
  ProcessSignal,
  ProcessStartRequest,
  ResumeRequest,
  RunCodeRequest,
  Session,
  ShutdownPolicy,
  WatchLine,
  WatchRequest,
  WriteFileResult,
} from './types.js';
export type { ForkRequest, ForkResult, Snapshot, SnapshotRequest } from './snapshots.js';
export type { AuditPage, AuditRecord, AuditVerification, Egress, EgressRule } from './egress.js';
export { VERSION } from './version.js';
