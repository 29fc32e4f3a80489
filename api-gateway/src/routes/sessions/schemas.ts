/** Schemas of the session routes (validation, serialization and the OpenAPI document). */
import { dnsLabel, envSchema, nameParams, namespaceQuery, problemResponses } from '../common-schemas.js';

/** A session as returned by the API. */
export const sessionView = {
  type: 'object',
  required: ['name', 'namespace', 'uid', 'ready', 'reason', 'message', 'execTransport'],
  properties: {
    name: { type: 'string' },
    namespace: { type: 'string' },
    uid: { type: 'string' },
    createdAt: { type: 'string', description: 'RFC 3339' },
    ready: { type: 'boolean', description: 'True when commands can run now' },
    reason: {
      type: 'string',
      description: 'Reason of the Ready condition, e.g. SandboxReady, PodPending, IdleTimeout',
    },
    message: { type: 'string' },
    image: { type: 'string' },
    execTransport: { type: 'string', enum: ['Agent', 'KubernetesExec'] },
    idleTimeoutSeconds: { type: 'integer' },
    maxLifetimeSeconds: { type: 'integer' },
    shutdownPolicy: { type: 'string', enum: ['Delete', 'Retain', 'Suspend'] },
    suspended: {
      type: 'boolean',
      description: 'spec.suspend: no Pod; the next exec, file or MCP call (or resume) brings it back',
    },
    persistentWorkspace: { type: 'boolean', description: '/workspace is a PersistentVolumeClaim' },
    pool: { type: 'string', description: 'The SandboxPool the session was created from (spec.poolRef)' },
    lastActivityTime: { type: 'string' },
    expiresAt: { type: 'string' },
    fromSnapshot: {
      type: 'string',
      description: 'The SandboxSnapshot the workspace was restored from (spec.workspace.fromSnapshot)',
    },
    workspaceVerified: {
      type: 'object',
      description:
        'Condition WorkspaceVerified: the restored workspace verified against the snapshot digest, or a resumed workspace compared with the digest taken at suspension',
      required: ['status', 'reason', 'message'],
      properties: {
        status: { type: 'string', enum: ['True', 'False', 'Unknown'] },
        reason: { type: 'string' },
        message: { type: 'string' },
      },
    },
  },
} as const;

/** POST /v1/sessions body: a name (optional: generated) and spec overrides limited by policy. */
export const createBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    name: {
      ...dnsLabel,
      description: 'Session name; create-or-get is idempotent by name. Generated when absent.',
    },
    namespace: { ...dnsLabel, description: "Namespace; defaults to the API key's default namespace" },
    image: {
      type: 'string',
      minLength: 1,
      maxLength: 512,
      description: "Sandbox image (gateway allowlist); the operator's default when absent",
    },
    env: {
      ...envSchema,
      description:
        "Environment variables of the session's shell, processes and terminals (with a pool: delivered in the warm Pod's bind)",
    },
    secretEnv: {
      type: 'object',
      maxProperties: 64,
      propertyNames: envSchema.propertyNames,
      additionalProperties: {
        type: 'object',
        additionalProperties: false,
        required: ['secret', 'key'],
        properties: {
          secret: {
            type: 'string',
            minLength: 1,
            maxLength: 253,
            pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$',
            description: "A Secret of the session's namespace",
          },
          key: { type: 'string', minLength: 1, maxLength: 253, pattern: '^[-._a-zA-Z0-9]+$' },
        },
      },
      description:
        "Environment variables read from Secrets of the session's namespace (the operator reads them; the values never pass through the gateway nor appear in the Pod spec): name -> {secret, key}",
    },
    startupCommand: {
      type: 'string',
      minLength: 1,
      maxLength: 16384,
      description:
        'A command the agent starts as a background process at every start of the session (create, warm bind, resume): e.g. a dev server',
    },
    idleTimeoutSeconds: {
      type: 'integer',
      minimum: 0,
      maximum: 604800,
      description: 'Idle seconds before collection (bounded by policy)',
    },
    maxLifetimeSeconds: {
      type: 'integer',
      minimum: 60,
      maximum: 2592000,
      description: 'Lifetime in seconds (bounded by policy)',
    },
    shutdownPolicy: {
      type: 'string',
      enum: ['Delete', 'Retain', 'Suspend'],
      description: 'Suspend (suspend when idle, resume on the next call) needs persistentWorkspace',
    },
    execTransport: { type: 'string', enum: ['Agent', 'KubernetesExec'] },
    persistentWorkspace: {
      type: 'boolean',
      description:
        "/workspace (= HOME) on a PersistentVolumeClaim of the cluster's default StorageClass: it survives suspension and Pod loss",
    },
    pool: {
      ...dnsLabel,
      description:
        'A SandboxPool of the namespace: bind one of its warm Pods (cold from its template when none is ready); not with image, execTransport or persistentWorkspace (env, secretEnv and startupCommand travel in the bind)',
    },
  },
} as const;

export const createSchema = {
  summary: 'Create a session, or get it when one of that name exists (201 created, 200 existing)',
  tags: ['sessions'],
  querystring: namespaceQuery,
  body: createBody,
  response: { 200: sessionView, 201: sessionView, ...problemResponses(409, 422) },
} as const;

export const getSchema = {
  summary: 'Get one session',
  tags: ['sessions'],
  params: nameParams,
  querystring: namespaceQuery,
  response: { 200: sessionView, ...problemResponses(404, 410, 503) },
} as const;

export const listSchema = {
  summary: 'List the sessions of a namespace',
  tags: ['sessions'],
  querystring: namespaceQuery,
  response: {
    200: {
      type: 'object',
      required: ['items'],
      properties: { items: { type: 'array', items: sessionView } },
    },
    ...problemResponses(503),
  },
} as const;

export const suspendSchema = {
  summary: 'Suspend a session: its Pod is deleted, its Secret, token and workspace kept (idempotent)',
  tags: ['sessions'],
  params: nameParams,
  querystring: namespaceQuery,
  body: { type: 'object', additionalProperties: false, properties: {} },
  response: { 200: sessionView, ...problemResponses(404, 409, 410) },
} as const;

export const resumeSchema = {
  summary:
    'Resume a suspended session (a new Pod on the same workspace; idempotent). Not needed before a call: exec, file and MCP calls resume it',
  tags: ['sessions'],
  params: nameParams,
  querystring: namespaceQuery,
  body: {
    type: 'object',
    additionalProperties: false,
    properties: {
      waitSeconds: {
        type: 'integer',
        minimum: 0,
        maximum: 300,
        description:
          "Seconds to wait for Ready before answering (0, the default: at once; bounded by the gateway's maximum wait); 503 session-not-ready after that",
      },
    },
  },
  response: { 200: sessionView, ...problemResponses(404, 409, 410, 503) },
} as const;

export const deleteSchema = {
  summary: 'Delete a session (its pod and secret go with it)',
  tags: ['sessions'],
  params: nameParams,
  querystring: namespaceQuery,
  response: { 204: { type: 'null' }, ...problemResponses(404) },
} as const;
