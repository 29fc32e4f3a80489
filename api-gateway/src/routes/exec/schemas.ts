/**
 * Schemas of the exec routes: the public exec contract (crds/src/public/exec.ts, the source of
 * truth) with the bounds and defaults of the gateway's configuration filled in.
 */
import {
  EXEC_STDIN_MAX_BYTES,
  EXEC_STDIN_MAX_CHARS,
  execStdinChunkSchema,
  execStdinCloseSchema,
  publicExecRequestSchema,
  publicExecResultSchema,
} from '@sandbox-platform/api';

import type { ExecLimits } from '../../config.js';
import { nameParams, namespaceQuery, problemResponses } from '../common-schemas.js';

export { EXEC_STDIN_MAX_BYTES, EXEC_STDIN_MAX_CHARS };
/** What the exec routes accept on top of the body limit, so that a full stdin fits. */
export const EXEC_STDIN_BODY_BYTES = EXEC_STDIN_MAX_CHARS + 1024;

/** The exec request body (same shape for buffered and streaming exec). */
export function execBody(limits: ExecLimits) {
  const { properties } = publicExecRequestSchema;
  return {
    ...publicExecRequestSchema,
    properties: {
      ...properties,
      timeoutSeconds: {
        ...properties.timeoutSeconds,
        maximum: limits.maxTimeoutSeconds,
        description: `Seconds before the command is killed (default ${limits.defaultTimeoutSeconds})`,
      },
      waitSeconds: {
        ...properties.waitSeconds,
        maximum: limits.maxWaitSeconds,
        description: `Seconds to wait for a session that is not Ready yet (default ${limits.defaultWaitSeconds})`,
      },
    },
  } as const;
}

/** The result of one command (the agent's shape, identical for both transports). */
export const execResult = publicExecResultSchema;

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
