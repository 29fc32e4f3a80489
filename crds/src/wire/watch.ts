/**
 * File watching's part of the agent's wire contract (docs/adr/0033-code-interpreter.md): `GET
 * /v1/watch` follows create, modify, delete and rename events under a directory of the workspace
 * as NDJSON, in the order the kernel (inotify) reported them. Schemas follow ./schemas.ts and are
 * listed in its WIRE_SCHEMAS.
 */
import { MAX_CWD_LENGTH } from './limits.js';

/**
 * Events the agent holds for one watch while its client does not read; beyond, events are dropped
 * and counted, and an `overflow` line says how many once the client reads again.
 */
export const WATCH_QUEUE_MAX_EVENTS = 4096;
/** Longest line of a watch stream (two workspace paths, JSON-escaped, and the line's members). */
export const WATCH_LINE_MAX_BYTES = 2 * 6 * MAX_CWD_LENGTH + 1024;

const path = {
  type: 'string',
  maxLength: MAX_CWD_LENGTH,
  description: 'Path relative to the workspace ("" is the workspace itself)',
} as const;

/** `GET /v1/watch` query. */
export const watchQuerySchema = {
  type: 'object',
  description: '`GET /v1/watch` query.',
  additionalProperties: false,
  properties: {
    path: {
      ...path,
      description:
        'Directory to watch, relative to the workspace (default: the workspace); must stay inside it',
    },
    recursive: {
      type: 'boolean',
      description: 'Watch subdirectories too, present and future (default false)',
    },
  },
} as const;

/** A change under the watched directory (NDJSON line of `GET /v1/watch`). */
export const watchEventSchema = {
  type: 'object',
  description: 'A change under the watched directory (NDJSON line of `GET /v1/watch`).',
  additionalProperties: false,
  required: ['type', 'path', 'directory'],
  properties: {
    type: {
      type: 'string',
      enum: ['create', 'modify', 'delete', 'rename'],
      description:
        'create (also moved in from elsewhere), modify (content written), delete (also moved out), rename (moved within the watched tree: from -> path)',
    },
    path: { ...path, description: 'The path, relative to the workspace (for rename: the new one)' },
    from: { ...path, description: 'Only for rename: the old path, relative to the workspace' },
    directory: { type: 'boolean', description: 'The path is a directory' },
  },
} as const;

/**
 * A line about the watch itself: `watching` first (events after it are reported), `overflow` when
 * events were dropped (the client read too slowly, or the kernel's queue overflowed), `end` last.
 */
export const watchStatusEventSchema = {
  type: 'object',
  description:
    'A line about the watch itself: `watching` first (events after it are reported), `overflow` when events were dropped (the client read too slowly, or the kernel queue overflowed), `end` last.',
  additionalProperties: false,
  required: ['type'],
  properties: {
    type: { type: 'string', enum: ['watching', 'overflow', 'end'] },
    path: { ...path, description: 'Only on watching: the watched directory, relative to the workspace' },
    recursive: { type: 'boolean', description: 'Only on watching: subdirectories are watched too' },
    dropped: {
      type: 'integer',
      minimum: 0,
      description: 'Only on overflow: events lost (0 when the kernel lost an unknown number)',
    },
    reason: {
      type: 'string',
      maxLength: 256,
      description:
        'Only on end: why it ended (agent-stopping, directory-gone, too-many-directories, session-suspended, session-deleted, timeout, agent-closed)',
    },
  },
} as const;
