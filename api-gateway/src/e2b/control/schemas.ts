/**
 * JSON schemas of the E2B control API's requests (E2B's OpenAPI document, the fields its SDKs
 * send). Not in the gateway's OpenAPI document (no summary): these routes are E2B's API.
 * Unknown fields are accepted (newer SDKs add some); the unsupported known ones are refused in
 * routes.ts with a message.
 */
const stringMap = { type: 'object', additionalProperties: { type: 'string' } } as const;

/** The `{sandboxID}` path parameter. */
export const idParams = {
  type: 'object',
  required: ['sandboxID'],
  properties: { sandboxID: { type: 'string', minLength: 1, maxLength: 256 } },
} as const;

/** POST /sandboxes (E2B's NewSandbox). */
export const createSchema = {
  body: {
    type: 'object',
    required: ['templateID'],
    additionalProperties: true,
    properties: {
      templateID: { type: 'string', minLength: 1, maxLength: 512 },
      timeout: { type: 'integer', minimum: 0 },
      autoPause: { type: 'boolean' },
      autoPauseMemory: { type: 'boolean' },
      autoResume: { type: 'object', properties: { enabled: { type: 'boolean' } } },
      secure: { type: 'boolean' },
      allow_internet_access: { type: 'boolean' },
      network: { type: ['object', 'null'] },
      metadata: stringMap,
      envVars: stringMap,
      mcp: { type: ['object', 'null'] },
      iam: { type: ['object', 'null'] },
      volumeMounts: { type: 'array' },
    },
  },
} as const;

/** GET /v2/sandboxes. */
export const listSchema = {
  querystring: {
    type: 'object',
    additionalProperties: true,
    properties: {
      metadata: { type: 'string', maxLength: 16384 },
      state: { type: 'string', maxLength: 64 },
      order: { type: 'string', enum: ['asc', 'desc'] },
      startedAfter: { type: 'string', maxLength: 64 },
      template: { type: 'string', maxLength: 512 },
      limit: { type: 'integer', minimum: 1, maximum: 1000 },
      nextToken: { type: 'string', maxLength: 1024 },
    },
  },
} as const;

/** POST /sandboxes/{id}/timeout (E2B's SandboxTimeoutRequest). */
export const timeoutSchema = {
  params: idParams,
  body: {
    type: 'object',
    required: ['timeout'],
    additionalProperties: true,
    properties: { timeout: { type: 'integer', minimum: 0 } },
  },
} as const;

/** POST /sandboxes/{id}/pause (`memory` is accepted: only the files are kept either way). */
export const pauseSchema = {
  params: idParams,
  body: { type: ['object', 'null'], additionalProperties: true, properties: { memory: { type: 'boolean' } } },
} as const;

/** POST /sandboxes/{id}/connect and /resume. */
export const connectSchema = {
  params: idParams,
  body: {
    type: ['object', 'null'],
    additionalProperties: true,
    properties: {
      timeout: { type: 'integer', minimum: 0 },
      autoPause: { type: 'boolean' },
      memory: { type: 'boolean' },
    },
  },
} as const;
