/**
 * Schemas of the egress rule routes: the body is spec.egress exactly as the CRD defines it (its
 * schema, from @sandbox-platform/api, without the Kubernetes-only keywords; the API server then
 * runs the CEL rules and the admission policy on the write).
 */
import { sandboxSessionSchema } from '@sandbox-platform/api';

import { nameParams, namespaceQuery, problemResponses } from '../common-schemas.js';

/** A JSON schema without the `x-kubernetes-*` keywords (unknown to a strict Ajv). */
function withoutKubernetesKeywords(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(withoutKubernetesKeywords);
  if (typeof schema !== 'object' || schema === null) return schema;
  return Object.fromEntries(
    Object.entries(schema)
      .filter(([k]) => !k.startsWith('x-kubernetes-'))
      .map(([k, v]) => [k, withoutKubernetesKeywords(v)]),
  );
}

/** spec.egress of the CRD. */
export const egressSchema = withoutKubernetesKeywords(
  (sandboxSessionSchema as unknown as { properties: { spec: { properties: { egress: object } } } }).properties
    .spec.properties.egress,
) as Record<string, unknown>;

const answer = {
  type: 'object',
  required: ['name', 'namespace', 'egress'],
  properties: { name: { type: 'string' }, namespace: { type: 'string' }, egress: egressSchema },
} as const;

/** PUT /v1/sessions/{name}/egress: replace the session's rules. */
export const putEgressSchema = {
  tags: ['egress'],
  summary: "Replace a session's egress rules (effective within a second, also for open tunnels)",
  params: nameParams,
  querystring: namespaceQuery,
  body: { ...egressSchema, additionalProperties: false },
  response: { 200: answer, ...problemResponses(404, 422, 503) },
} as const;

/** GET /v1/sessions/{name}/egress. */
export const getEgressSchema = {
  tags: ['egress'],
  summary: "A session's egress rules",
  params: nameParams,
  querystring: namespaceQuery,
  response: { 200: answer, ...problemResponses(404) },
} as const;
