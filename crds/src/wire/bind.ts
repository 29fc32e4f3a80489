/**
 * The bind call of a warm Pod's agent (docs/adr/0016-warm-pools.md): the operator hands a Pod it
 * claimed for a session the session's token, once, with a request signed by the operator's bind
 * key (../bind.ts). JSON Schemas as in ./schemas.ts (registered in WIRE_SCHEMAS there, so the types
 * are generated): strict, no `$ref`, `additionalProperties: false` everywhere.
 *
 * The signature covers the payload exactly as sent: `payload` is a JSON text, not an object, so
 * neither end has to agree on a canonical serialization; the agent verifies the signature over
 * those bytes first, and only then parses and validates the text with {@link bindPayloadSchema}.
 */

/** Longest payload text accepted (it holds three short identities and a 64-character token). */
export const MAX_BIND_PAYLOAD_LENGTH = 2048;

const identity = (what: string) =>
  ({
    type: 'object',
    additionalProperties: false,
    required: ['namespace', 'name', 'uid'],
    description: what,
    properties: {
      namespace: { type: 'string', minLength: 1, maxLength: 63 },
      name: { type: 'string', minLength: 1, maxLength: 253 },
      uid: { type: 'string', minLength: 1, maxLength: 64 },
    },
  }) as const;

/** `POST /v1/bind` body: the signed payload text and its signature. */
export const bindRequestSchema = {
  type: 'object',
  description: '`POST /v1/bind` body: a BindPayload as JSON text, and its Ed25519 signature.',
  additionalProperties: false,
  required: ['payload', 'signature'],
  properties: {
    payload: {
      type: 'string',
      minLength: 2,
      maxLength: MAX_BIND_PAYLOAD_LENGTH,
      description: 'A BindPayload serialized as JSON; the signature covers exactly these bytes (UTF-8)',
    },
    signature: {
      type: 'string',
      pattern: '^[A-Za-z0-9+/]{86}==$',
      description: "Ed25519 signature of the payload's UTF-8 bytes by the operator's bind key, base64",
    },
  },
} as const;

/** What a bind says: this Pod now serves this session, with this token. */
export const bindPayloadSchema = {
  type: 'object',
  description: 'What a bind says: this Pod now serves this session, and accepts only this token.',
  additionalProperties: false,
  required: ['version', 'pod', 'session', 'token'],
  properties: {
    version: { type: 'integer', const: 1, description: 'Payload version' },
    pod: identity("The warm Pod being bound: must be the agent's own Pod (namespace, name and UID)"),
    session: identity('The SandboxSession the Pod is bound to'),
    token: {
      type: 'string',
      pattern: '^[0-9a-f]{64}$',
      description: 'The session token (hex HMAC-SHA256); the only bearer token accepted from then on',
    },
  },
} as const;

/** `GET /v1/bind` 200 body, with the session token as bearer: the session the agent serves. */
export const bindStatusSchema = {
  type: 'object',
  description: '`GET /v1/bind` and `POST /v1/bind` 200 body: the session the agent is bound to.',
  additionalProperties: false,
  required: ['bound', 'session'],
  properties: {
    bound: { type: 'boolean', const: true },
    session: identity('The SandboxSession the agent serves'),
  },
} as const;
