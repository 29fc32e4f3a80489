/**
 * Schemas of the process routes. Requests are the agent's wire schemas (@sandbox-platform/api)
 * plus the gateway's own members (waitSeconds, namespace, the follow's timeout); answers are the
 * wire schemas as they are, so the OpenAPI document and the agent contract cannot drift apart.
 */
import {
  MAX_WAIT_SECONDS,
  processInfoSchema,
  processListSchema,
  processOutputQuerySchema,
  processOutputSchema,
  processStartRequestSchema,
} from '@sandbox-platform/api';

import type { ExecLimits } from '../../config.js';
import { envSchema, nameParams, namespaceQuery, problemResponses } from '../common-schemas.js';

/** `{name}` and `{id}` path parameters (a malformed id is answered 404 process-not-found). */
export const processParams = {
  type: 'object',
  required: ['name', 'id'],
  properties: {
    ...nameParams.properties,
    id: { type: 'string', maxLength: 64, description: 'Process id (12 hex digits)' },
  },
} as const;

const sessionParams = nameParams;
const { namespace } = namespaceQuery.properties;
const namespaceOnly = namespaceQuery;

/** Longest follow a request may ask for; the client follows again from its offsets afterwards. */
export const MAX_FOLLOW_SECONDS = MAX_WAIT_SECONDS;
/** Follow length when the request names none. */
export const DEFAULT_FOLLOW_SECONDS = 60;

export function startSchema(limits: ExecLimits) {
  const { command, cwd } = processStartRequestSchema.properties;
  return {
    summary: 'Start a command in the background (own process group; outlives the call)',
    tags: ['processes'],
    params: sessionParams,
    querystring: namespaceOnly,
    body: {
      type: 'object',
      required: ['command'],
      additionalProperties: false,
      properties: {
        command,
        cwd,
        env: { ...envSchema, description: 'Extra environment variables for this process' },
        waitSeconds: {
          type: 'integer',
          minimum: 0,
          maximum: limits.maxWaitSeconds,
          description: `Seconds to wait for a session that is not Ready yet (default ${limits.defaultWaitSeconds})`,
        },
      },
    },
    response: { 201: processInfoSchema, ...problemResponses(404, 409, 410, 501, 502, 503, 504) },
  } as const;
}

export const listSchema = {
  summary: 'List the background processes of a session (running and exited, oldest first)',
  tags: ['processes'],
  params: sessionParams,
  querystring: namespaceOnly,
  response: { 200: processListSchema, ...problemResponses(404, 410, 501, 502, 503, 504) },
} as const;

export const describeSchema = {
  summary: 'Describe one background process',
  tags: ['processes'],
  params: processParams,
  querystring: namespaceOnly,
  response: { 200: processInfoSchema, ...problemResponses(404, 410, 501, 502, 503, 504) },
} as const;

export const removeSchema = {
  summary: 'Remove an exited background process (409 process-running while it runs)',
  tags: ['processes'],
  params: processParams,
  querystring: namespaceOnly,
  response: { 204: { type: 'null' }, ...problemResponses(404, 409, 410, 501, 502, 503, 504) },
} as const;

export const outputSchema = {
  summary: 'Read the output of a background process from byte offsets (bounded per stream)',
  tags: ['processes'],
  params: processParams,
  querystring: {
    type: 'object',
    additionalProperties: false,
    properties: { ...processOutputQuerySchema.properties, namespace },
  },
  response: { 200: processOutputSchema, ...problemResponses(404, 410, 501, 502, 503, 504) },
} as const;

export const followSchema = {
  summary:
    'Follow the output of a background process as NDJSON (stdout/stderr lines with offsets, then one exit line); ' +
    'a stream that ends without an exit line reached its timeout: follow again from the last offsets',
  tags: ['processes'],
  params: processParams,
  querystring: {
    type: 'object',
    additionalProperties: false,
    properties: {
      stdoutOffset: processOutputQuerySchema.properties.stdoutOffset,
      stderrOffset: processOutputQuerySchema.properties.stderrOffset,
      timeoutSeconds: {
        type: 'integer',
        minimum: 1,
        maximum: MAX_FOLLOW_SECONDS,
        description: `Seconds before the stream ends without an exit line (default ${DEFAULT_FOLLOW_SECONDS})`,
      },
      namespace,
    },
  },
  response: problemResponses(404, 410, 501, 502, 503, 504),
} as const;

export const signalSchema = {
  summary: 'Send a signal to the process group of a background process',
  tags: ['processes'],
  params: processParams,
  querystring: namespaceOnly,
  body: {
    type: 'object',
    required: ['signal'],
    additionalProperties: false,
    properties: {
      // Checked against the allow-list by the route, so a refused name is 400 signal-not-allowed.
      signal: { type: 'string', minLength: 1, maxLength: 32, description: 'Signal name, e.g. SIGTERM' },
    },
  },
  response: { 200: processInfoSchema, ...problemResponses(404, 409, 410, 501, 502, 503, 504) },
} as const;

export const waitSchema = {
  summary: 'Wait for a background process to exit; the answer says whether it did (state)',
  tags: ['processes'],
  params: processParams,
  querystring: {
    type: 'object',
    additionalProperties: false,
    properties: {
      timeoutSeconds: {
        type: 'integer',
        minimum: 0,
        maximum: MAX_WAIT_SECONDS,
        description: `Seconds to wait (default 30, at most ${MAX_WAIT_SECONDS})`,
      },
      namespace,
    },
  },
  response: { 200: processInfoSchema, ...problemResponses(404, 410, 501, 502, 503, 504) },
} as const;
