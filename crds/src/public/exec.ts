/**
 * The gateway's public exec contract, schema first: the body of `POST /v1/sessions/{name}/exec`
 * and `.../exec/stream` and the 200 answer of the buffered exec, as JSON Schema objects `as const`
 * (issue 33). They are the source of truth of the REST route schemas (api-gateway/src/routes/exec/
 * adds the configured bounds), of the TypeScript types `make generate` writes to
 * ./generated/types.ts (crds/scripts/generate-wire.mjs), of the MCP exec tool (checked by a test
 * in api-gateway) and of the SDK's types (checked at compile time in sdk/typescript/test/types/).
 * The agent's own wire contract is ../wire/ (what the gateway sends on, not what callers send).
 */
import { execResultSchema } from '../wire/schemas.js';

/**
 * Most decoded stdin bytes an exec may carry: the agent's default SANDBOX_AGENT_STDIN_MAX_BYTES
 * (an agent configured lower answers 413 payload-too-large itself).
 */
export const EXEC_STDIN_MAX_BYTES = 1024 * 1024;
/** Longest stdin string: the base64 spelling of EXEC_STDIN_MAX_BYTES. */
export const EXEC_STDIN_MAX_CHARS = Math.ceil(EXEC_STDIN_MAX_BYTES / 3) * 4;

/** Environment variables: names as POSIX shell identifiers; SANDBOX_* is reserved for the platform. */
export const publicEnvSchema = {
  type: 'object',
  maxProperties: 64,
  propertyNames: {
    type: 'string',
    pattern: '^[A-Za-z_][A-Za-z0-9_]*$',
    maxLength: 128,
    not: { type: 'string', pattern: '^SANDBOX_' },
  },
  additionalProperties: { type: 'string', maxLength: 32768 },
} as const;

/**
 * The exec request body (same shape for buffered and streaming exec). `timeoutSeconds` and
 * `waitSeconds` get their maximum and default from the gateway's configuration (routes/exec/).
 */
export const publicExecRequestSchema = {
  type: 'object',
  required: ['command'],
  additionalProperties: false,
  properties: {
    command: {
      type: 'string',
      minLength: 1,
      description: 'A bash command line, run in the session (state persists with Agent)',
    },
    timeoutSeconds: { type: 'integer', minimum: 1 },
    cwd: {
      type: 'string',
      minLength: 1,
      maxLength: 4096,
      description: 'Working directory, relative to /workspace or absolute',
    },
    env: { ...publicEnvSchema, description: 'Extra environment variables for this command' },
    stdin: {
      type: 'string',
      maxLength: EXEC_STDIN_MAX_CHARS,
      description: `Bytes for the command's standard input (then EOF), spelled as stdinEncoding says; at most ${EXEC_STDIN_MAX_BYTES} bytes. Without it stdin is empty`,
    },
    stdinEncoding: {
      type: 'string',
      enum: ['utf-8', 'base64'],
      description: 'Spelling of stdin: utf-8 (default) or base64 for binary data',
    },
    waitSeconds: { type: 'integer', minimum: 0 },
  },
} as const;

/** The result of one command: the agent's answer (../wire/), identical for both transports. */
export const publicExecResultSchema = {
  type: 'object',
  required: execResultSchema.required,
  properties: {
    stdout: { type: 'string' },
    stderr: { type: 'string' },
    stdoutEncoding: { type: 'string', enum: ['utf-8', 'base64'] },
    stderrEncoding: { type: 'string', enum: ['utf-8', 'base64'] },
    exitCode: { type: 'integer', description: '128+N when killed by signal N; 124 on timeout' },
    durationMs: { type: 'integer' },
    truncated: { type: 'boolean', description: 'Output exceeded the cap and was cut' },
    timedOut: { type: 'boolean' },
    shellReset: {
      type: 'boolean',
      description: 'The shell was restarted before this command: earlier state is lost',
    },
  },
} as const;
