/**
 * The code interpreter's part of the agent's wire contract (docs/adr/0033-code-interpreter.md):
 * stateful code runs in named contexts (one Jupyter kernel each), their streamed events, and the
 * contexts themselves. Schemas follow the conventions of ./schemas.ts (draft-07, no `$ref`, every
 * object closed) and are listed in its WIRE_SCHEMAS, which generates their types.
 *
 * Everything a run returns comes out of the sandbox and is bounded by the agent before it is sent,
 * by the constants below (a cell printing 100 MiB, a 50 MiB image): both ends rely on them.
 */
import { MAX_TIMEOUT_SECONDS, NO_NUL_PATTERN } from './limits.js';

/** A context name: lowercase letters, digits, `_` and `-`, starting with a letter or digit. */
export const CODE_CONTEXT_PATTERN = '^[a-z0-9][a-z0-9_-]{0,62}$';
/** The context of a run that names none. */
export const DEFAULT_CODE_CONTEXT = 'default';
/** Languages a context can run (a Jupyter kernel each). */
export const CODE_LANGUAGES = ['python'] as const;
/** A language of {@link CODE_LANGUAGES}. */
export type CodeLanguage = (typeof CODE_LANGUAGES)[number];

/** Largest code of one run, in characters (the agent's body limit bounds the request too). */
export const CODE_MAX_CHARS = 512 * 1024;
/** UTF-8 bytes of stdout (and of stderr) one run returns; the rest is counted in `dropped`. */
export const CODE_STREAM_MAX_BYTES = 1024 * 1024;
/** Largest stdout or stderr text of one event line, in UTF-8 bytes (longer output is split). */
export const CODE_STREAM_CHUNK_BYTES = 64 * 1024;
/** Largest single MIME item of a result or display (bytes of its text; base64 for images). */
export const CODE_ITEM_MAX_BYTES = 8 * 1024 * 1024;
/** All MIME items of one run's results and displays together; items beyond are omitted. */
export const CODE_DISPLAY_MAX_BYTES = 16 * 1024 * 1024;
/** Longest NDJSON line of a run's event stream, serialized: a display with all its items, and its members. */
export const CODE_LINE_MAX_BYTES = CODE_DISPLAY_MAX_BYTES + 64 * 1024;
/**
 * Most bytes a whole run's event stream may take, serialized: both streams (JSON escaping may
 * double them), every display, the error and the end line. The gateway refuses more.
 */
export const CODE_RUN_MAX_BYTES = 4 * CODE_STREAM_MAX_BYTES + CODE_DISPLAY_MAX_BYTES + 1024 * 1024;
/** Lines of a traceback an error event carries at most. */
export const CODE_TRACEBACK_MAX_LINES = 256;

const contextName = {
  type: 'string',
  pattern: CODE_CONTEXT_PATTERN,
  description: `Name of the context (default "${DEFAULT_CODE_CONTEXT}"); each has its own kernel and variables`,
} as const;

const language = {
  type: 'string',
  enum: CODE_LANGUAGES,
  description: 'Language of the context (default python); fixed when the context starts',
} as const;

const mimeName = { type: 'string', minLength: 1, maxLength: 255 } as const;

const count = { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER } as const;

const time = { type: 'string', minLength: 1, description: 'RFC 3339 time with milliseconds, UTC' } as const;

/** `POST /v1/code` body: run code in a context (started on first use), stream the events. */
export const codeRunRequestSchema = {
  type: 'object',
  description: '`POST /v1/code` body: run code in a context (started on first use), stream the events.',
  additionalProperties: false,
  required: ['code'],
  properties: {
    code: {
      type: 'string',
      maxLength: CODE_MAX_CHARS,
      pattern: NO_NUL_PATTERN,
      description: 'Source to run, as a notebook cell: the value of a last expression is the result',
    },
    context: contextName,
    language,
    timeoutSeconds: {
      type: 'integer',
      minimum: 1,
      maximum: MAX_TIMEOUT_SECONDS,
      description: `Seconds from the start of the run to its interrupt (default 60, at most ${MAX_TIMEOUT_SECONDS})`,
    },
  },
} as const;

/** A stdout or stderr line of a run's event stream (NDJSON). */
export const codeStreamEventSchema = {
  type: 'object',
  description: "A stdout or stderr line of a run's event stream (NDJSON).",
  additionalProperties: false,
  required: ['type', 'text'],
  properties: {
    type: { type: 'string', enum: ['stdout', 'stderr'], description: 'The stream the text came from' },
    text: {
      type: 'string',
      description: `Text as the kernel sent it (at most ${CODE_STREAM_CHUNK_BYTES} bytes)`,
    },
  },
} as const;

/** One MIME item left out of a result or display because of its size. */
export const codeOmittedItemSchema = {
  type: 'object',
  description: 'One MIME item left out of a result or display because of its size.',
  additionalProperties: false,
  required: ['mime', 'bytes'],
  properties: {
    mime: { ...mimeName, description: 'Its MIME type, e.g. image/png' },
    bytes: { ...count, description: 'Its size (bytes of its text; base64 for binary types)' },
  },
} as const;

/**
 * A result (the value of the last expression) or a display (display(), a chart) of a run: every
 * MIME type the kernel gave, as text (base64 for images; JSON text for application/json).
 */
export const codeDataEventSchema = {
  type: 'object',
  description:
    'A result (the value of the last expression) or a display (display(), a chart) of a run: every MIME type the kernel gave, as text (base64 for images; JSON text for application/json).',
  additionalProperties: false,
  required: ['type', 'data'],
  properties: {
    type: {
      type: 'string',
      enum: ['result', 'display'],
      description: 'result: the last expression; display: anything shown',
    },
    data: {
      type: 'object',
      maxProperties: 64,
      propertyNames: mimeName,
      additionalProperties: { type: 'string' },
      description:
        'MIME type -> content, e.g. {"text/plain": "42"} or {"image/png": "<base64>", "text/plain": "<Figure>"}',
    },
    omitted: {
      type: 'array',
      maxItems: 64,
      items: codeOmittedItemSchema,
      description:
        'MIME items left out because they were over the size bounds (a clear marker, never a cut item)',
    },
    executionCount: { ...count, description: 'Only on a result: the execution count of the run' },
  },
} as const;

/** The error of a run: an exception (name, value, traceback without terminal colours). */
export const codeErrorEventSchema = {
  type: 'object',
  description: 'The error of a run: an exception (name, value, traceback without terminal colours).',
  additionalProperties: false,
  required: ['type', 'name', 'value', 'traceback'],
  properties: {
    type: { type: 'string', const: 'error' },
    name: { type: 'string', maxLength: 4096, description: 'Exception class, e.g. ZeroDivisionError' },
    value: { type: 'string', maxLength: 4096, description: 'Its message' },
    traceback: {
      type: 'array',
      maxItems: CODE_TRACEBACK_MAX_LINES,
      items: { type: 'string' },
      description: 'The formatted traceback, one entry per frame or line (bounded)',
    },
  },
} as const;

/** Bytes and displays of a run that were not sent because of the bounds. */
export const codeDroppedSchema = {
  type: 'object',
  description: 'Bytes and displays of a run that were not sent because of the bounds.',
  additionalProperties: false,
  required: ['stdout', 'stderr', 'displays'],
  properties: {
    stdout: { ...count, description: 'stdout bytes dropped' },
    stderr: { ...count, description: 'stderr bytes dropped' },
    displays: { ...count, description: 'results and displays with every item omitted or not sent' },
  },
} as const;

/** The last line of a run's event stream. */
export const codeEndEventSchema = {
  type: 'object',
  description: "The last line of a run's event stream.",
  additionalProperties: false,
  required: ['type', 'status', 'durationMs', 'contextReset', 'truncated', 'dropped'],
  properties: {
    type: { type: 'string', const: 'end' },
    status: {
      type: 'string',
      enum: ['ok', 'error', 'timeout', 'interrupted', 'kernel-died'],
      description:
        'ok; error (an exception, see the error line); timeout (interrupted at its deadline; the context keeps its state unless the kernel had to be restarted); interrupted (by an interrupt call); kernel-died (the kernel exited: its state is gone)',
    },
    executionCount: { ...count, description: 'The execution count of the run, when the kernel gave one' },
    durationMs: { type: 'integer', minimum: 0, description: 'Wall time of the run in milliseconds' },
    contextReset: {
      type: 'boolean',
      description:
        'A new kernel was started for this run: variables of earlier runs are gone (first run, or after a restart or death)',
    },
    truncated: { type: 'boolean', description: 'Something was dropped or omitted (see dropped and omitted)' },
    dropped: codeDroppedSchema,
  },
} as const;

/** `POST /v1/code/contexts` body: start a context now (else it starts on its first run). */
export const codeContextCreateRequestSchema = {
  type: 'object',
  description: '`POST /v1/code/contexts` body: start a context now (else it starts on its first run).',
  additionalProperties: false,
  required: ['name'],
  properties: { name: contextName, language },
} as const;

/** A context (answer of create, interrupt and restart; element of the list). */
export const codeContextSchema = {
  type: 'object',
  description: 'A context (answer of create, interrupt and restart; element of the list).',
  additionalProperties: false,
  required: ['name', 'language', 'state', 'executionCount', 'createdAt'],
  properties: {
    name: contextName,
    language,
    state: {
      type: 'string',
      enum: ['starting', 'idle', 'busy', 'stopped'],
      description: 'stopped: no kernel runs (it died or was never started); the next run starts one',
    },
    pid: { type: 'integer', minimum: 1, description: 'Process id of the kernel, while one runs' },
    executionCount: { ...count, description: 'Runs in the current kernel' },
    createdAt: time,
    lastRunAt: { ...time, description: 'Start of the last run, when there was one' },
  },
} as const;

/** `GET /v1/code/contexts` 200 body. */
export const codeContextListSchema = {
  type: 'object',
  description: '`GET /v1/code/contexts` 200 body.',
  additionalProperties: false,
  required: ['contexts'],
  properties: { contexts: { type: 'array', items: codeContextSchema, description: 'Oldest first' } },
} as const;
