/** Schemas of the exec routes; bounds come from the gateway configuration. */
import { execStdinChunkSchema, execStdinCloseSchema } from '@sandbox-platform/api';

import type { ExecLimits } from '../../config.js';

/**
 * Most decoded stdin bytes an exec may carry: the agent's default SANDBOX_AGENT_STDIN_MAX_BYTES
 * (an agent configured lower answers 413 payload-too-large itself).
 */
export const EXEC_STDIN_MAX_BYTES = 1024 * 1024;
/** Longest stdin string: the base64 spelling of EXEC_STDIN_MAX_BYTES. */
export const EXEC_STDIN_MAX_CHARS = Math.ceil(EXEC_STDIN_MAX_BYTES / 3) * 4;
/** What the exec routes accept on top of the body limit, so that a full stdin fits. */
export const EXEC_STDIN_BODY_BYTES = EXEC_STDIN_MAX_CHARS + 1024;
import { envSchema, nameParams, namespaceQuery, problemResponses } from '../common-schemas.js';

/** The exec request body (same shape for buffered and streaming exec). */
export function execBody(limits: ExecLimits) {
  return {
    type: 'object',
    required: ['command'],
    additionalProperties: false,
    properties: {
      command: {
        type: 'string',
        minLength: 1,
        description: 'A bash command line, run in the session (state persists with Agent)',
      },
      timeoutSeconds: {
        type: 'integer',
        minimum: 1,
        maximum: limits.maxTimeoutSeconds,
        description: `Seconds before the command is killed (default ${limits.defaultTimeoutSeconds})`,
      },
      cwd: {
        type: 'string',
        minLength: 1,
        maxLength: 4096,
        description: 'Working directory, relative to /workspace or absolute',
      },
      env: { ...envSchema, description: 'Extra environment variables for this command' },
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
      waitSeconds: {
        type: 'integer',
        minimum: 0,
        maximum: limits.maxWaitSeconds,
        description: `Seconds to wait for a session that is not Ready yet (default ${limits.defaultWaitSeconds})`,
      },
    },
  } as const;
}

/** The result of one command (the agent's shape, identical for both transports). */
export const execResult = {
  type: 'object',
  required: [
    'stdout',
    'stderr',
    'stdoutEncoding',
    'stderrEncoding',
    'exitCode',
    'durationMs',
    'truncated',
    'timedOut',
    'shellReset',
  ],
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

export function execSchema(limits: ExecLimits) {
  return {
    summary: 'Run a command in a session and return its output',
    tags: ['exec'],
    params: nameParams,
    querystring: namespaceQuery,
    body: execBody(limits),
    response: { 200: execResult, ...problemResponses(404, 410, 502, 503, 504) },
  } as const;
}

/**
 * The NDJSON variant of the exec stream body, for the OpenAPI document only (plugins/openapi.ts):
 * fastify validates its first line with `body` (routes/exec/streamed-stdin.ts), the stdin lines
 * are checked one by one as they arrive (exec/guards/stdin-guard.ts).
 */
export const execStreamNdjsonBody = {
  type: 'string',
  description:
    'NDJSON: line 1 is the exec request (the JSON body, without stdin and stdinEncoding), then stdin lines ' +
    '{"type":"stdin","data","encoding"?} (each at most 1 MiB), optionally one {"type":"close"} line (EOF; the ' +
    'end of the body is EOF too). Lines reach the command as they arrive. A bad later line, or stdin over ' +
    'GATEWAY_MAX_EXEC_STDIN_STREAM_BYTES, stops the command and cuts the answer (no exit line)',
  'x-ndjson-lines': { stdin: execStdinChunkSchema, close: execStdinCloseSchema },
} as const;

export function execStreamSchema(limits: ExecLimits) {
  return {
    summary: 'Run a command and stream its output as NDJSON (stdout/stderr lines, then one exit line)',
    tags: ['exec'],
    params: nameParams,
    querystring: namespaceQuery,
    body: execBody(limits),
    ndjsonBody: execStreamNdjsonBody,
    response: problemResponses(404, 410, 502, 503, 504),
  } as const;
}
