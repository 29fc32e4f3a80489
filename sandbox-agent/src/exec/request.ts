/**
 * Validation of the exec request body `{command, timeoutSeconds?, cwd?, env?}`: wrong types,
 * out-of-range values and unknown fields are 400, so a client typo never silently changes what runs.
 */
import { HttpProblem } from '../http/problem.js';
import type { ExecRequest } from '../shell/persistent-shell.js';
import { ENV_NAME } from '../shell/wrapper.js';

/** Deadline when the request names none. */
export const DEFAULT_TIMEOUT_SECONDS = 60;
/** Longest allowed deadline. */
export const MAX_TIMEOUT_SECONDS = 300;

const FIELDS = new Set(['command', 'timeoutSeconds', 'cwd', 'env']);

/** Parses a decoded JSON body into an exec request; throws 400 with the first problem found. */
export function parseExecRequest(body: unknown): ExecRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    fail('the body must be a JSON object');
  const input = body as Record<string, unknown>;
  const unknown = Object.keys(input).filter((k) => !FIELDS.has(k));
  if (unknown.length > 0) fail(`unknown field(s): ${unknown.join(', ')}`);
  const request: ExecRequest = {
    command: text(input.command, 'command'),
    timeoutSeconds: timeout(input.timeoutSeconds),
  };
  if (input.cwd !== undefined) request.cwd = text(input.cwd, 'cwd');
  if (input.env !== undefined) request.env = environment(input.env);
  return request;
}

function fail(detail: string): never {
  throw new HttpProblem('invalid-request', detail);
}

/** A non-empty string without NUL (bash strings cannot hold NUL). */
function text(value: unknown, field: string): string {
  if (typeof value !== 'string' || value.length === 0) fail(`${field} must be a non-empty string`);
  if (value.includes('\0')) fail(`${field} must not contain NUL characters`);
  return value;
}

function timeout(value: unknown): number {
  if (value === undefined) return DEFAULT_TIMEOUT_SECONDS;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_TIMEOUT_SECONDS) {
    fail(`timeoutSeconds must be an integer in 1..${MAX_TIMEOUT_SECONDS}`);
  }
  return value;
}

function environment(value: unknown): Record<string, string> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) fail('env must be an object');
  const env: Record<string, string> = {};
  for (const [name, v] of Object.entries(value)) {
    if (!ENV_NAME.test(name)) fail(`env name "${name}" is not a valid variable name`);
    if (typeof v !== 'string') fail(`env.${name} must be a string`);
    if (v.includes('\0')) fail(`env.${name} must not contain NUL characters`);
    env[name] = v;
  }
  return env;
}
