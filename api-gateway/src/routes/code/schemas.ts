/**
 * Schemas of the code routes (ADR 0033). Requests are the agent's wire schemas plus the gateway's
 * own members (waitSeconds, namespace); answers are the wire schemas, or (the gathered run) built
 * from their parts, so the OpenAPI document and the agent contract cannot drift apart.
 */
import {
  CODE_CONTEXT_PATTERN,
  codeContextCreateRequestSchema,
  codeContextListSchema,
  codeContextSchema,
  codeDataEventSchema,
  codeDroppedSchema,
  codeEndEventSchema,
  codeErrorEventSchema,
  codeRunRequestSchema,
} from '@sandbox-platform/api';

import type { ExecLimits } from '../../config.js';
import { nameParams, namespaceQuery, problemResponses } from '../common-schemas.js';

/** `{name}` and `{context}` path parameters. */
export const contextParams = {
  type: 'object',
  required: ['name', 'context'],
  properties: {
    ...nameParams.properties,
    context: { type: 'string', pattern: CODE_CONTEXT_PATTERN, description: 'Context name' },
  },
} as const;

/** The run body: the agent's, and how long to wait for a session that is not Ready yet. */
function runBody(limits: ExecLimits) {
  return {
    ...codeRunRequestSchema,
    properties: {
      ...codeRunRequestSchema.properties,
      waitSeconds: {
        type: 'integer',
        minimum: 0,
        maximum: limits.maxWaitSeconds,
        description: `Seconds to wait for a session that is not Ready yet (default ${limits.defaultWaitSeconds})`,
      },
    },
  } as const;
}

const { type: _dataType, executionCount: _count, ...outputProps } = codeDataEventSchema.properties;
const { type: _errorType, ...errorProps } = codeErrorEventSchema.properties;

/** `POST /v1/sessions/{name}/code` 200 body: a whole run. */
export const codeResultSchema = {
  type: 'object',
  description: 'A whole run: its streams, its results and displays in order, its error and how it ended.',
  additionalProperties: false,
  required: ['status', 'stdout', 'stderr', 'outputs', 'durationMs', 'contextReset', 'truncated', 'dropped'],
  properties: {
    status: codeEndEventSchema.properties.status,
    stdout: { type: 'string', description: 'Everything printed to stdout (bounded; see dropped)' },
    stderr: { type: 'string', description: 'Everything printed to stderr (bounded; see dropped)' },
    outputs: {
      type: 'array',
      description: 'Results (the value of the last expression) and displays (charts, tables), in order',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['type', 'data'],
        properties: { type: codeDataEventSchema.properties.type, ...outputProps },
      },
    },
    error: {
      type: 'object',
      additionalProperties: false,
      required: ['name', 'value', 'traceback'],
      properties: errorProps,
      description: 'The exception, when the run raised one',
    },
    executionCount: codeEndEventSchema.properties.executionCount,
    durationMs: codeEndEventSchema.properties.durationMs,
    contextReset: codeEndEventSchema.properties.contextReset,
    truncated: codeEndEventSchema.properties.truncated,
    dropped: codeDroppedSchema,
  },
} as const;

export function runSchema(limits: ExecLimits) {
  return {
    summary:
      'Run code in a context of the session (a Jupyter kernel, started on first use) and return the whole run',
    tags: ['code'],
    params: nameParams,
    querystring: namespaceQuery,
    body: runBody(limits),
    response: { 200: codeResultSchema, ...problemResponses(400, 404, 409, 410, 501, 502, 503, 504) },
  } as const;
}

export function streamSchema(limits: ExecLimits) {
  return {
    summary:
      'Run code and stream its events as NDJSON (stdout/stderr, result/display, error, then one end line)',
    tags: ['code'],
    params: nameParams,
    querystring: namespaceQuery,
    body: runBody(limits),
    response: problemResponses(400, 404, 409, 410, 501, 502, 503, 504),
  } as const;
}

export const listSchema = {
  summary: 'List the code contexts of a session',
  tags: ['code'],
  params: nameParams,
  querystring: namespaceQuery,
  response: { 200: codeContextListSchema, ...problemResponses(404, 410, 501, 502, 503, 504) },
} as const;

export const createSchema = {
  summary: 'Start a code context now (a run starts it otherwise)',
  tags: ['code'],
  params: nameParams,
  querystring: namespaceQuery,
  body: codeContextCreateRequestSchema,
  response: {
    200: codeContextSchema,
    201: codeContextSchema,
    ...problemResponses(400, 404, 409, 410, 501, 502, 503, 504),
  },
} as const;

export const removeSchema = {
  summary: 'Stop a code context and forget its state',
  tags: ['code'],
  params: contextParams,
  querystring: namespaceQuery,
  response: { 204: { type: 'null' }, ...problemResponses(404, 410, 501, 502, 503, 504) },
} as const;

export function actionSchema(action: 'interrupt' | 'restart') {
  return {
    summary:
      action === 'interrupt'
        ? 'Interrupt the running code of a context (KeyboardInterrupt in Python)'
        : 'Restart the kernel of a context: every variable is gone',
    tags: ['code'],
    params: contextParams,
    querystring: namespaceQuery,
    response: { 200: codeContextSchema, ...problemResponses(404, 410, 501, 502, 503, 504) },
  } as const;
}
