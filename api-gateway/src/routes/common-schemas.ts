/** JSON schema pieces shared by several routes (and hence by the OpenAPI document). */
import { problemSchema } from '../plugins/errors.js';

/** A DNS-1123 label (session names, namespaces). */
export const dnsLabel = {
  type: 'string',
  minLength: 1,
  maxLength: 63,
  pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
} as const;

/** `?namespace=`: optional; the API key's default namespace when absent. */
export const namespaceQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    namespace: { ...dnsLabel, description: "Namespace; defaults to the API key's default namespace" },
  },
} as const;

/** `{name}` path parameter. */
export const nameParams = {
  type: 'object',
  required: ['name'],
  properties: { name: { ...dnsLabel, description: 'Session name' } },
} as const;

/** Environment variables (the public contract's: crds/src/public/exec.ts). */
export { publicEnvSchema as envSchema } from '@sandbox-platform/api';

/** Responses every authenticated route may give. */
export function problemResponses(...statuses: number[]): Record<number, typeof problemSchema> {
  const out: Record<number, typeof problemSchema> = {};
  for (const s of [400, 401, 403, ...statuses, 500]) out[s] = problemSchema;
  return out;
}
