/**
 * The exec request body `{command, timeoutSeconds?, cwd?, env?, stdin?, stdinEncoding?}`, checked
 * against the shared contract's schema (execRequestSchema): wrong types, out-of-range values and
 * unknown fields are 400, so a client typo never silently changes what runs.
 */
import { DEFAULT_TIMEOUT_SECONDS, type ExecRequest as WireExecRequest } from '@sandbox-platform/api';

import { HttpProblem } from '../http/problem.js';
import { validated, VALIDATORS } from '../http/validate.js';
import type { ExecRequest } from '../shell/persistent-shell.js';
import { decodeInput } from './encoding.js';
import { bufferedStdin } from './stdin.js';

export { DEFAULT_TIMEOUT_SECONDS, MAX_TIMEOUT_SECONDS } from '@sandbox-platform/api';

/** Bounds of {@link parseExecRequest}. */
export interface ExecRequestLimits {
  /** Most decoded stdin bytes a JSON request may carry (413 beyond). */
  stdinMaxBytes: number;
}

/** Validates a decoded JSON body into an exec request; throws 400 (or 413 for stdin) on the first problem. */
export function parseExecRequest(body: unknown, limits: ExecRequestLimits): ExecRequest {
  const wire = validated(VALIDATORS.execRequest, body);
  const request: ExecRequest = {
    command: wire.command,
    timeoutSeconds: wire.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS,
  };
  if (wire.cwd !== undefined) request.cwd = wire.cwd;
  if (wire.env !== undefined) request.env = wire.env;
  if (wire.stdin !== undefined) request.stdin = bufferedStdin(stdinBytes(wire, limits.stdinMaxBytes));
  return request;
}

function stdinBytes(wire: WireExecRequest, limit: number): Buffer {
  const bytes = decodeInput(wire.stdin ?? '', wire.stdinEncoding);
  if (!bytes) throw new HttpProblem('invalid-request', 'stdin is not valid base64');
  if (bytes.length > limit) {
    throw new HttpProblem('payload-too-large', `stdin is ${bytes.length} bytes, the limit is ${limit}`);
  }
  return bytes;
}
