/** Schemas of the file routes. Bodies are raw bytes, not JSON. */
import { dnsLabel, namespaceQuery, problemResponses } from '../common-schemas.js';

/** `{name}` and the file path (the `*` of the route, relative to /workspace). */
export const fileParams = {
  type: 'object',
  required: ['name', '*'],
  properties: {
    name: { ...dnsLabel, description: 'Session name' },
    '*': { type: 'string', minLength: 1, maxLength: 4096, description: 'Path relative to /workspace' },
  },
} as const;

export const putFileSchema = {
  summary: 'Upload a file into the session workspace (raw bytes; atomic replace)',
  tags: ['files'],
  params: fileParams,
  querystring: namespaceQuery,
  response: {
    201: {
      type: 'object',
      required: ['path', 'size'],
      properties: { path: { type: 'string' }, size: { type: 'integer' } },
    },
    ...problemResponses(404, 410, 413, 502, 503, 504),
  },
} as const;

export const getFileSchema = {
  summary: 'Download a file from the session workspace (raw bytes)',
  tags: ['files'],
  params: fileParams,
  querystring: namespaceQuery,
  response: problemResponses(404, 410, 413, 502, 503, 504),
} as const;
