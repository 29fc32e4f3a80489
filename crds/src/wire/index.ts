/**
 * The agent's wire contract (docs/adr/0018-agent-wire-contract-and-interactive-calls.md): JSON Schemas of every request
 * and answer (./schemas.ts, the source of truth), the TypeScript types generated from them
 * (./generated/types.ts), the problem slugs, the paths and the fixed bounds. The agent validates
 * what it receives with these schemas, the gateway what the agent answers.
 */
import type {
  CodeDataEvent,
  CodeEndEvent,
  CodeErrorEvent,
  CodeStreamEvent,
  ExecExitEvent,
  ExecOutputEvent,
  ExecStdinChunk,
  ExecStdinClose,
  ExitEvent,
  ProcessOutputEvent,
  WatchEvent,
  WatchStatusEvent,
} from './generated/types.js';

export type * from './generated/types.js';
export * from './archive.js';
export * from './archive-digest.js';
export * from './archive-schemas.js';
export * from './bind.js';
export * from './code.js';
export * from './limits.js';
export * from './problems.js';
export * from './routes.js';
export * from './schemas.js';
export * from './watch.js';

/** How bytes are spelled in a JSON string: UTF-8 text when valid, else base64. */
export type OutputEncoding = ExecOutputEvent['encoding'];

/** One NDJSON line of a `POST /v1/exec/stream` answer: output lines, then one exit line. */
export type ExecStreamEvent = ExecOutputEvent | ExecExitEvent;

/** A line after the first of an NDJSON `POST /v1/exec/stream` request: stdin bytes or its close. */
export type ExecStdinLine = ExecStdinChunk | ExecStdinClose;

/** One NDJSON line of `GET /v1/processes/<id>/output/stream`: output lines, then one exit line. */
export type ProcessFollowEvent = ProcessOutputEvent | ExitEvent;

/** The text message the agent sends on a PTY WebSocket when the shell ended (then it closes). */
export type PtyExitMessage = ExitEvent;

/** One NDJSON line of a `POST /v1/code` answer: output, results, displays, an error, then one end line. */
export type CodeEvent = CodeStreamEvent | CodeDataEvent | CodeErrorEvent | CodeEndEvent;

/** One NDJSON line of `GET /v1/watch`: a `watching` line, changes, overflows, an `end` line. */
export type WatchLine = WatchEvent | WatchStatusEvent;
