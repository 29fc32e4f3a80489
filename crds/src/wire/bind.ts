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

/**
 * Longest payload text accepted, in characters. Besides three short identities and a 64-character
 * token it carries the session's env (plain values up to 32 KiB, Secret values up to 32 KiB: the
 * CRD and the operator bound those) and its startup command (16 KiB), each of which JSON may spell
 * with up to 6 characters per character (control characters as \uXXXX).
 */
export const MAX_BIND_PAYLOAD_LENGTH = 512 * 1024;

/**
 * Largest `POST /v1/bind` body the agent reads (the route's bound) and the operator sends (it
 * checks before signing: a bind over it is a condition of the session, never a truncated body).
 * The payload text inside is escaped once more (`"` and `\` doubled) and non-ASCII characters
 * take up to 3 bytes each.
 */
export const MAX_BIND_BODY_BYTES = 2 * 1024 * 1024;

/** Most env entries a bind carries (spec.env's maxItems). */
export const MAX_BIND_ENV_ENTRIES = 64;

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
    env: {
      type: 'array',
      maxItems: MAX_BIND_ENV_ENTRIES,
      description:
        "The session's env (spec.env, Secret references resolved by the operator), exported in the session's shell, processes and terminals after the template's; never in the agent's own environment",
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['name', 'value'],
        properties: {
          name: {
            type: 'string',
            minLength: 1,
            maxLength: 128,
            // spec.env's name rule: a shell variable name, SANDBOX_* reserved for the platform.
            pattern: '^(?!SANDBOX_)[A-Za-z_][A-Za-z0-9_]*$',
          },
          value: { type: 'string', maxLength: 32768, pattern: '^[^\\u0000]*$' },
        },
      },
    },
    startup: {
      type: 'object',
      additionalProperties: false,
      required: ['command'],
      description: 'spec.startup: the agent starts the command as a background process once bound',
      properties: { command: { type: 'string', minLength: 1, maxLength: 16384 } },
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
