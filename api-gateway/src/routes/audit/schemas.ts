/** Schemas of the audit routes (records as the audit service stores them: crds/src/audit.ts). */
import { nameParams, namespaceQuery, problemResponses } from '../common-schemas.js';

const detailValue = { type: ['string', 'number', 'boolean', 'null'] } as const;

const record = {
  type: 'object',
  required: ['seq', 'time', 'namespace', 'session', 'kind', 'actor', 'outcome', 'detail', 'prev', 'hash'],
  properties: {
    seq: { type: 'integer' },
    time: { type: 'string' },
    namespace: { type: 'string' },
    session: { type: 'string' },
    kind: { type: 'string' },
    actor: { type: 'string' },
    outcome: { type: 'string' },
    detail: { type: 'object', additionalProperties: detailValue },
    prev: { type: 'string' },
    hash: { type: 'string' },
  },
} as const;

/** GET /v1/sessions/{name}/audit. */
export const auditRecordsSchema = {
  tags: ['audit'],
  summary:
    "A session's audit records (exec, file writes, processes, terminals, port requests, egress), oldest first",
  params: nameParams,
  querystring: {
    type: 'object',
    additionalProperties: false,
    properties: {
      ...namespaceQuery.properties,
      afterSeq: { type: 'integer', minimum: 0, default: 0, description: 'Records with a larger seq' },
      limit: { type: 'integer', minimum: 1, maximum: 1000, default: 100 },
    },
  },
  response: {
    200: {
      type: 'object',
      required: ['records', 'nextSeq'],
      properties: {
        records: { type: 'array', items: record },
        lastSeq: { type: ['integer', 'null'] },
        nextSeq: { type: 'integer', description: 'afterSeq of the next page' },
      },
    },
    ...problemResponses(501, 502),
  },
} as const;

/** GET /v1/sessions/{name}/audit/verify. */
export const auditVerifySchema = {
  tags: ['audit'],
  summary: "Recompute the session's audit hash chain over the stored records",
  params: nameParams,
  querystring: namespaceQuery,
  response: {
    200: {
      type: 'object',
      required: ['valid', 'records'],
      properties: {
        valid: { type: 'boolean' },
        records: { type: 'integer' },
        firstSeq: { type: ['integer', 'null'] },
        lastSeq: { type: ['integer', 'null'] },
        brokenAt: { type: 'integer' },
        reason: { type: 'string' },
      },
    },
    ...problemResponses(501, 502),
  },
} as const;
