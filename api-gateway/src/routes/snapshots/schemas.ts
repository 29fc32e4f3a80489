/** JSON schemas of the snapshot and fork routes (docs/snapshots.md); also the OpenAPI document's. */
import { dnsLabel, namespaceQuery, problemResponses } from '../common-schemas.js';
import { sessionView } from '../sessions/schemas.js';
import { MAX_FORK_COUNT } from '../../service/snapshots-service.js';

const ttl = {
  type: 'integer',
  minimum: 0,
  maximum: 31536000,
  description: 'Seconds after the snapshot is Ready at which it is deleted (with its objects); unset: kept',
} as const;

export const snapshotView = {
  type: 'object',
  required: ['name', 'namespace', 'session', 'ready', 'phase', 'reason', 'message'],
  properties: {
    name: { type: 'string' },
    namespace: { type: 'string' },
    session: { type: 'string', description: 'The session whose /workspace it copies' },
    ready: { type: 'boolean', description: 'True once stored and its digest known' },
    phase: { type: 'string', enum: ['Pending', 'InProgress', 'Ready', 'Failed'] },
    reason: {
      type: 'string',
      description:
        'Reason of the Ready condition, e.g. SnapshotReady, Snapshotting, StoreUnavailable, QuotaExceeded',
    },
    message: { type: 'string' },
    digest: {
      type: 'string',
      description: 'sha256:<hex>: Merkle root over paths, modes, symlink targets and bytes',
    },
    sizeBytes: { type: 'integer' },
    files: { type: 'integer' },
    directories: { type: 'integer' },
    symlinks: { type: 'integer' },
    ttlSecondsAfterReady: { type: 'integer' },
    createdAt: { type: 'string' },
    completedAt: { type: 'string' },
  },
} as const;

const snapshotParams = {
  type: 'object',
  required: ['name'],
  properties: { name: { ...dnsLabel, description: 'Snapshot name' } },
} as const;

export const createSnapshotSchema = {
  summary: "Take a snapshot of a session's /workspace (answers at once; poll until ready)",
  tags: ['snapshots'],
  querystring: namespaceQuery,
  body: {
    type: 'object',
    required: ['session'],
    additionalProperties: false,
    properties: {
      session: { ...dnsLabel, description: 'The session to copy (Ready, same namespace)' },
      name: { ...dnsLabel, description: 'Snapshot name; generated (<session>-<random>) when absent' },
      namespace: { ...dnsLabel, description: "Namespace; defaults to the API key's default namespace" },
      ttlSecondsAfterReady: ttl,
    },
  },
  response: { 202: snapshotView, ...problemResponses(404, 409, 410, 503) },
} as const;

export const getSnapshotSchema = {
  summary: 'Get one snapshot',
  tags: ['snapshots'],
  params: snapshotParams,
  querystring: namespaceQuery,
  response: { 200: snapshotView, ...problemResponses(404, 503) },
} as const;

export const listSnapshotsSchema = {
  summary: 'List the snapshots of a namespace',
  tags: ['snapshots'],
  querystring: namespaceQuery,
  response: {
    200: {
      type: 'object',
      required: ['items'],
      properties: { items: { type: 'array', items: snapshotView } },
    },
    ...problemResponses(503),
  },
} as const;

export const deleteSnapshotSchema = {
  summary: 'Delete a snapshot (its objects in the store are deleted with it)',
  tags: ['snapshots'],
  params: snapshotParams,
  querystring: namespaceQuery,
  response: { 204: { type: 'null' }, ...problemResponses(404, 503) },
} as const;

export const forkSchema = {
  summary:
    'Fork a session: a snapshot of its /workspace and count new sessions started from it (each Ready once its copy is verified)',
  tags: ['snapshots'],
  params: {
    type: 'object',
    required: ['name'],
    properties: { name: { ...dnsLabel, description: 'Session name' } },
  },
  querystring: namespaceQuery,
  body: {
    type: 'object',
    required: ['count'],
    additionalProperties: false,
    properties: {
      count: { type: 'integer', minimum: 1, maximum: MAX_FORK_COUNT, description: 'Sessions to start' },
      names: {
        type: 'array',
        items: dnsLabel,
        maxItems: MAX_FORK_COUNT,
        description: 'Their names (exactly count); generated (<session>-fork-<random>) when absent',
      },
      ttlSecondsAfterReady: ttl,
    },
  },
  response: {
    201: {
      type: 'object',
      required: ['snapshot', 'sessions'],
      properties: { snapshot: snapshotView, sessions: { type: 'array', items: sessionView } },
    },
    ...problemResponses(404, 409, 410, 503),
  },
} as const;
