/**
 * The agent's wire contract, schema first: every request and answer of the in-pod agent's HTTP
 * API (docs/architecture.md, "Agent HTTP API") as a JSON Schema (draft-07) object `as const`.
 * These objects are the source of truth: the agent validates requests with them (ajv), the
 * gateway validates the agent's answers with them, and `make generate` derives the TypeScript
 * types of ./generated/types.ts from {@link WIRE_SCHEMAS} (crds/scripts/generate-wire.mjs;
 * `make verify` fails on drift). Change a shape here, then run `make generate`.
 *
 * Conventions, so that every schema compiles under ajv's strict mode and maps to plain types:
 * no `$ref` (shared parts are spread in), no `format` (times are described), no union `type`
 * arrays (absent fields instead of null), `additionalProperties: false` on every object (an
 * unknown field is a 400 on requests and a protocol error on answers). Query strings are
 * described as objects of integers and strings, validated with type coercion.
 */
import {
  ENV_NAME_PATTERN,
  MAX_CWD_LENGTH,
  MAX_ENV_ENTRIES,
  MAX_PTY_DIMENSION,
  MAX_READ_BYTES,
  MAX_TIMEOUT_SECONDS,
  MAX_WAIT_SECONDS,
  NO_NUL_PATTERN,
  PROCESS_ID_PATTERN,
  PROCESS_SIGNALS,
} from './limits.js';
import {
  archiveDigestRequestSchema,
  archiveRestoreQuerySchema,
  archiveSummarySchema,
} from './archive-schemas.js';
import { bindPayloadSchema, bindRequestSchema, bindStatusSchema } from './bind.js';
import {
  codeContextCreateRequestSchema,
  codeContextListSchema,
  codeContextSchema,
  codeDataEventSchema,
  codeDroppedSchema,
  codeEndEventSchema,
  codeErrorEventSchema,
  codeOmittedItemSchema,
  codeRunRequestSchema,
  codeStreamEventSchema,
} from './code.js';
import { watchEventSchema, watchQuerySchema, watchStatusEventSchema } from './watch.js';

// ---- shared parts -------------------------------------------------------------------------------

const encoding = {
  type: 'string',
  enum: ['utf-8', 'base64'],
  description: 'How the bytes are spelled: UTF-8 text when they are valid UTF-8, else base64',
} as const;

const exitCode = {
  type: 'integer',
  minimum: 0,
  maximum: 255,
  description: 'Exit status as bash reports it: 128+N when killed by signal N',
} as const;

const durationMs = { type: 'integer', minimum: 0, description: 'Wall time in milliseconds' } as const;

const offset = { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER } as const;

const command = {
  type: 'string',
  minLength: 1,
  pattern: NO_NUL_PATTERN,
  description: 'bash source, run as by `eval` (pipes, redirections, `&&` and the like work)',
} as const;

const cwd = {
  type: 'string',
  minLength: 1,
  maxLength: MAX_CWD_LENGTH,
  pattern: NO_NUL_PATTERN,
  description: 'Working directory for this call: absolute, or relative to the workspace',
} as const;

const env = {
  type: 'object',
  maxProperties: MAX_ENV_ENTRIES,
  propertyNames: { pattern: ENV_NAME_PATTERN },
  additionalProperties: { type: 'string', pattern: NO_NUL_PATTERN },
  description: 'Variables for this call only (names are shell identifiers; values without NUL)',
} as const;

const processId = {
  type: 'string',
  pattern: PROCESS_ID_PATTERN,
  description: 'Id of the process (12 hex digits, never reused)',
} as const;

const signalName = {
  type: 'string',
  enum: PROCESS_SIGNALS,
  description: 'Name of the signal, e.g. SIGTERM',
} as const;

const time = {
  type: 'string',
  minLength: 1,
  description: 'RFC 3339 time with milliseconds, UTC',
} as const;

// ---- health -------------------------------------------------------------------------------------

/** `GET /healthz` and `GET /livez` 200 body. */
export const healthSchema = {
  type: 'object',
  description: '`GET /healthz` and `GET /livez` 200 body.',
  additionalProperties: false,
  required: ['status'],
  properties: { status: { type: 'string', const: 'ok' } },
} as const;

// ---- problems -----------------------------------------------------------------------------------

/** Every error answer of the agent (`application/problem+json`). */
export const agentProblemSchema = {
  type: 'object',
  description: 'Every error answer of the agent (`application/problem+json`).',
  additionalProperties: false,
  required: ['type', 'title', 'status', 'detail'],
  properties: {
    type: {
      type: 'string',
      pattern: '^https://sandbox\\.dev/problems/[a-z-]+$',
      description: 'https://sandbox.dev/problems/<slug>; the slugs are AGENT_PROBLEMS',
    },
    title: { type: 'string', description: 'Short fixed title of the slug' },
    status: { type: 'integer', minimum: 400, maximum: 599, description: 'HTTP status' },
    detail: {
      type: 'string',
      description: 'What was wrong, for people; never the token or command output',
    },
  },
} as const;

// ---- exec ---------------------------------------------------------------------------------------

/**
 * `POST /v1/exec` body, and `POST /v1/exec/stream` body (JSON) or first NDJSON line. `stdin` is
 * written to the command's standard input, which is then closed; without it, stdin is
 * /dev/null (or, in an NDJSON stream request, the stdin lines that follow).
 */
export const execRequestSchema = {
  type: 'object',
  description:
    "`POST /v1/exec` body, and `POST /v1/exec/stream` body (JSON) or first NDJSON line. `stdin` is written to the command's standard input, which is then closed; without it, stdin is /dev/null (or, in an NDJSON stream request, the stdin lines that follow).",
  additionalProperties: false,
  required: ['command'],
  dependencies: { stdinEncoding: ['stdin'] },
  properties: {
    command,
    timeoutSeconds: {
      type: 'integer',
      minimum: 1,
      maximum: MAX_TIMEOUT_SECONDS,
      description: `Seconds from leaving the queue to the kill (default 60, at most ${MAX_TIMEOUT_SECONDS})`,
    },
    cwd,
    env,
    stdin: {
      type: 'string',
      description: 'Bytes for the command to read on its stdin, spelled as stdinEncoding says; then EOF',
    },
    stdinEncoding: { ...encoding, description: 'Spelling of stdin (default utf-8)' },
  },
} as const;

/** `POST /v1/exec` 200 body. */
export const execResultSchema = {
  type: 'object',
  description: '`POST /v1/exec` 200 body.',
  additionalProperties: false,
  required: [
    'stdout',
    'stderr',
    'stdoutEncoding',
    'stderrEncoding',
    'exitCode',
    'durationMs',
    'truncated',
    'timedOut',
    'shellReset',
  ],
  properties: {
    stdout: { type: 'string', description: 'Standard output (capped), spelled as stdoutEncoding says' },
    stderr: { type: 'string', description: 'Standard error (capped), spelled as stderrEncoding says' },
    stdoutEncoding: encoding,
    stderrEncoding: encoding,
    exitCode: { ...exitCode, description: 'Exit status: 128+N when killed by signal N, 124 on timeout' },
    durationMs,
    truncated: { type: 'boolean', description: 'A stream exceeded the output cap and was cut' },
    timedOut: { type: 'boolean', description: 'The deadline passed and the command was killed' },
    shellReset: {
      type: 'boolean',
      description: 'bash was restarted before this command: state of earlier calls is gone',
    },
  },
} as const;

/** An output line of the `POST /v1/exec/stream` answer (NDJSON). */
export const execOutputEventSchema = {
  type: 'object',
  description: 'An output line of the `POST /v1/exec/stream` answer (NDJSON).',
  additionalProperties: false,
  required: ['type', 'data', 'encoding'],
  properties: {
    type: { type: 'string', enum: ['stdout', 'stderr'], description: 'The stream the bytes came from' },
    data: { type: 'string', description: 'The bytes, spelled as encoding says' },
    encoding,
  },
} as const;

/** The last line of the `POST /v1/exec/stream` answer (NDJSON). */
export const execExitEventSchema = {
  type: 'object',
  description: 'The last line of the `POST /v1/exec/stream` answer (NDJSON).',
  additionalProperties: false,
  required: ['type', 'exitCode', 'durationMs', 'truncated', 'timedOut', 'shellReset'],
  properties: {
    type: { type: 'string', const: 'exit' },
    exitCode: execResultSchema.properties.exitCode,
    durationMs,
    truncated: execResultSchema.properties.truncated,
    timedOut: execResultSchema.properties.timedOut,
    shellReset: execResultSchema.properties.shellReset,
    stdinError: {
      type: 'string',
      description:
        'Only when an NDJSON request carried an invalid stdin line after the command started: what was wrong. The command was stopped as on cancellation.',
    },
  },
} as const;

/** A stdin line of an NDJSON `POST /v1/exec/stream` request body (after the first line). */
export const execStdinChunkSchema = {
  type: 'object',
  description: 'A stdin line of an NDJSON `POST /v1/exec/stream` request body (after the first line).',
  additionalProperties: false,
  required: ['type', 'data'],
  properties: {
    type: { type: 'string', const: 'stdin' },
    data: { type: 'string', description: 'Bytes for the command to read, spelled as encoding says' },
    encoding: { ...encoding, description: 'Spelling of data (default utf-8)' },
  },
} as const;

/** The line of an NDJSON `POST /v1/exec/stream` request body that closes stdin (EOF). */
export const execStdinCloseSchema = {
  type: 'object',
  description: 'The line of an NDJSON `POST /v1/exec/stream` request body that closes stdin (EOF).',
  additionalProperties: false,
  required: ['type'],
  properties: { type: { type: 'string', const: 'close' } },
} as const;

// ---- files --------------------------------------------------------------------------------------

/** `PUT /v1/files/<path>` 201 body. */
export const writeFileResultSchema = {
  type: 'object',
  description: '`PUT /v1/files/<path>` 201 body.',
  additionalProperties: false,
  required: ['path', 'size'],
  properties: {
    path: {
      type: 'string',
      maxLength: MAX_CWD_LENGTH,
      description: 'The path written, relative to the workspace',
    },
    size: { type: 'integer', minimum: 0, description: 'Bytes written' },
  },
} as const;

// ---- background processes -----------------------------------------------------------------------

/** `POST /v1/processes` body: a command started in the background. */
export const processStartRequestSchema = {
  type: 'object',
  description: '`POST /v1/processes` body: a command started in the background.',
  additionalProperties: false,
  required: ['command'],
  properties: { command, cwd, env },
} as const;

/**
 * `POST /v1/processes` query. `follow=1`: one call that starts the process and follows it, the
 * answer of a start (201 ProcessInfo) replaced by 200 NDJSON: the output lines and the exit line of
 * `GET /v1/processes/<id>/output/stream` from offset 0, with the process's id and pid in the
 * `x-process-id` and `x-process-pid` headers (a command's start, output and exit in one round trip;
 * the process is listed, signalled and removed as any other).
 */
export const processStartQuerySchema = {
  type: 'object',
  description: '`POST /v1/processes` query.',
  additionalProperties: false,
  properties: {
    follow: {
      type: 'integer',
      minimum: 0,
      maximum: 1,
      description:
        '1: answer 200 with the output followed to the exit (NDJSON, as GET /v1/processes/<id>/output/stream), the id and pid in the x-process-id and x-process-pid headers; 0 or absent: 201 ProcessInfo',
    },
  },
} as const;

/** Byte counters of one output stream of a background process. */
export const outputCountersSchema = {
  type: 'object',
  description: 'Byte counters of one output stream of a background process.',
  additionalProperties: false,
  required: ['size', 'dropped'],
  properties: {
    size: { ...offset, description: 'Bytes the process wrote to the stream so far' },
    dropped: {
      ...offset,
      description: 'Oldest bytes no longer held (the buffer is a ring); offsets below this are gone',
    },
  },
} as const;

/** A background process (answer of start, get, signal and wait; element of the list). */
export const processInfoSchema = {
  type: 'object',
  description: 'A background process (answer of start, get, signal and wait; element of the list).',
  additionalProperties: false,
  required: ['id', 'pid', 'command', 'state', 'startedAt', 'stdout', 'stderr'],
  properties: {
    id: processId,
    pid: { type: 'integer', minimum: 1, description: 'Process id of its bash (also its process group)' },
    command: {
      type: 'string',
      maxLength: 4096,
      description: 'The command as started (its first 4096 characters)',
    },
    cwd: { type: 'string', description: 'The requested working directory, when one was given' },
    state: {
      type: 'string',
      enum: ['running', 'exited'],
      description: 'exited once its bash ended and its output pipes were drained',
    },
    exitCode: { ...exitCode, description: 'Only when exited: 128+N when killed by signal N' },
    signal: { type: 'string', description: 'Only when exited by a signal: its name' },
    startedAt: time,
    exitedAt: { ...time, description: 'Only when exited: RFC 3339 time with milliseconds, UTC' },
    stdout: outputCountersSchema,
    stderr: outputCountersSchema,
  },
} as const;

/** `GET /v1/processes` 200 body. */
export const processListSchema = {
  type: 'object',
  description: '`GET /v1/processes` 200 body.',
  additionalProperties: false,
  required: ['processes'],
  properties: {
    processes: { type: 'array', items: processInfoSchema, description: 'Oldest first' },
  },
} as const;

/** `POST /v1/processes/<id>/signal` body. */
export const processSignalRequestSchema = {
  type: 'object',
  description: '`POST /v1/processes/<id>/signal` body.',
  additionalProperties: false,
  required: ['signal'],
  properties: { signal: signalName },
} as const;

/** `GET /v1/processes/<id>/output` query. */
export const processOutputQuerySchema = {
  type: 'object',
  description: '`GET /v1/processes/<id>/output` query.',
  additionalProperties: false,
  properties: {
    stdoutOffset: { ...offset, description: 'First stdout byte wanted (default 0)' },
    stderrOffset: { ...offset, description: 'First stderr byte wanted (default 0)' },
    maxBytes: {
      type: 'integer',
      minimum: 1,
      maximum: MAX_READ_BYTES,
      description: `Most bytes returned per stream (default and at most ${MAX_READ_BYTES})`,
    },
  },
} as const;

/** One stream's part of a `GET /v1/processes/<id>/output` answer. */
export const outputChunkSchema = {
  type: 'object',
  description: "One stream's part of a `GET /v1/processes/<id>/output` answer.",
  additionalProperties: false,
  required: ['offset', 'nextOffset', 'skipped', 'data', 'encoding'],
  properties: {
    offset: { ...offset, description: 'Offset of the first byte of data in the stream' },
    nextOffset: { ...offset, description: 'Offset to read from next (offset + the bytes of data)' },
    skipped: {
      ...offset,
      description: 'Bytes between the requested offset and offset that were dropped from the ring',
    },
    data: { type: 'string', description: 'The bytes, spelled as encoding says' },
    encoding,
  },
} as const;

/** `GET /v1/processes/<id>/output` 200 body. */
export const processOutputSchema = {
  type: 'object',
  description: '`GET /v1/processes/<id>/output` 200 body.',
  additionalProperties: false,
  required: ['process', 'stdout', 'stderr'],
  properties: { process: processInfoSchema, stdout: outputChunkSchema, stderr: outputChunkSchema },
} as const;

/** `GET /v1/processes/<id>/output/stream` query. */
export const processFollowQuerySchema = {
  type: 'object',
  description: '`GET /v1/processes/<id>/output/stream` query.',
  additionalProperties: false,
  properties: {
    stdoutOffset: processOutputQuerySchema.properties.stdoutOffset,
    stderrOffset: processOutputQuerySchema.properties.stderrOffset,
  },
} as const;

/** An output line of `GET /v1/processes/<id>/output/stream` (NDJSON). */
export const processOutputEventSchema = {
  type: 'object',
  description: 'An output line of `GET /v1/processes/<id>/output/stream` (NDJSON).',
  additionalProperties: false,
  required: ['type', 'offset', 'skipped', 'data', 'encoding'],
  properties: {
    type: { type: 'string', enum: ['stdout', 'stderr'], description: 'The stream the bytes came from' },
    offset: outputChunkSchema.properties.offset,
    skipped: {
      ...offset,
      description: 'Bytes before offset this follower missed (dropped from the ring before it read them)',
    },
    data: outputChunkSchema.properties.data,
    encoding,
  },
} as const;

/** The last line of `GET /v1/processes/<id>/output/stream`, and the PTY's exit message. */
export const exitEventSchema = {
  type: 'object',
  description: "The last line of `GET /v1/processes/<id>/output/stream`, and the PTY's exit message.",
  additionalProperties: false,
  required: ['type', 'exitCode'],
  properties: {
    type: { type: 'string', const: 'exit' },
    exitCode,
    signal: { type: 'string', description: 'Only when ended by a signal: its name' },
  },
} as const;

/** `GET /v1/processes/<id>/wait` query. */
export const processWaitQuerySchema = {
  type: 'object',
  description: '`GET /v1/processes/<id>/wait` query.',
  additionalProperties: false,
  properties: {
    timeoutSeconds: {
      type: 'integer',
      minimum: 0,
      maximum: MAX_WAIT_SECONDS,
      description: `Seconds to wait for the exit (default 30, at most ${MAX_WAIT_SECONDS}); the answer says whether it came`,
    },
  },
} as const;

// ---- terminal -----------------------------------------------------------------------------------

const dimension = { type: 'integer', minimum: 1, maximum: MAX_PTY_DIMENSION } as const;

/** `GET /v1/pty` (WebSocket upgrade) query. */
export const ptyQuerySchema = {
  type: 'object',
  description: '`GET /v1/pty` (WebSocket upgrade) query.',
  additionalProperties: false,
  properties: {
    cols: { ...dimension, description: 'Columns of the terminal (default 80)' },
    rows: { ...dimension, description: 'Rows of the terminal (default 24)' },
    cwd,
  },
} as const;

/** A text message from the PTY client: resize the terminal (the shell gets SIGWINCH). */
export const ptyResizeMessageSchema = {
  type: 'object',
  description: 'A text message from the PTY client: resize the terminal (the shell gets SIGWINCH).',
  additionalProperties: false,
  required: ['type', 'cols', 'rows'],
  properties: {
    type: { type: 'string', const: 'resize' },
    cols: { ...dimension, description: 'Columns' },
    rows: { ...dimension, description: 'Rows' },
  },
} as const;

// ---- the list the generator and the tests walk ------------------------------------------------------

/**
 * Every schema of the contract under the name of its generated TypeScript type. Adding a schema
 * here (and running `make generate`) adds its type to ./generated/types.ts.
 */
export const WIRE_SCHEMAS = {
  Health: healthSchema,
  AgentProblem: agentProblemSchema,
  ExecRequest: execRequestSchema,
  ExecResult: execResultSchema,
  ExecOutputEvent: execOutputEventSchema,
  ExecExitEvent: execExitEventSchema,
  ExecStdinChunk: execStdinChunkSchema,
  ExecStdinClose: execStdinCloseSchema,
  WriteFileResult: writeFileResultSchema,
  ProcessStartRequest: processStartRequestSchema,
  ProcessStartQuery: processStartQuerySchema,
  OutputCounters: outputCountersSchema,
  ProcessInfo: processInfoSchema,
  ProcessList: processListSchema,
  ProcessSignalRequest: processSignalRequestSchema,
  ProcessOutputQuery: processOutputQuerySchema,
  OutputChunk: outputChunkSchema,
  ProcessOutput: processOutputSchema,
  ProcessFollowQuery: processFollowQuerySchema,
  ProcessOutputEvent: processOutputEventSchema,
  ExitEvent: exitEventSchema,
  ProcessWaitQuery: processWaitQuerySchema,
  PtyQuery: ptyQuerySchema,
  PtyResizeMessage: ptyResizeMessageSchema,
  BindRequest: bindRequestSchema,
  BindPayload: bindPayloadSchema,
  BindStatus: bindStatusSchema,
  CodeRunRequest: codeRunRequestSchema,
  CodeStreamEvent: codeStreamEventSchema,
  CodeOmittedItem: codeOmittedItemSchema,
  CodeDataEvent: codeDataEventSchema,
  CodeErrorEvent: codeErrorEventSchema,
  CodeDropped: codeDroppedSchema,
  CodeEndEvent: codeEndEventSchema,
  CodeContextCreateRequest: codeContextCreateRequestSchema,
  CodeContext: codeContextSchema,
  CodeContextList: codeContextListSchema,
  WatchQuery: watchQuerySchema,
  WatchEvent: watchEventSchema,
  WatchStatusEvent: watchStatusEventSchema,
  ArchiveSummary: archiveSummarySchema,
  ArchiveRestoreQuery: archiveRestoreQuerySchema,
  ArchiveDigestRequest: archiveDigestRequestSchema,
} as const;
