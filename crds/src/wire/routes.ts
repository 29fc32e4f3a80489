/**
 * Paths and content types of the agent's HTTP API (port AGENT_PORT), so that no client spells them
 * by hand. The shapes behind each path are in ./schemas.ts; the table in docs/architecture.md
 * ("Agent HTTP API") lists them together.
 */

/** Content type of NDJSON bodies: streamed answers, and streamed exec requests with stdin. */
export const NDJSON_CONTENT_TYPE = 'application/x-ndjson';

/**
 * Headers of `POST /v1/processes?follow=1` (a start whose answer is the process's followed output):
 * the process's id and pid, as the body is its output from the first byte, then its exit.
 */
export const PROCESS_ID_HEADER = 'x-process-id';
export const PROCESS_PID_HEADER = 'x-process-pid';

/** Fixed paths of the agent. */
export const AGENT_PATHS = {
  /** GET, no auth: readiness (bash answers). */
  healthz: '/healthz',
  /** GET, no auth: liveness (the agent is not wedged). */
  livez: '/livez',
  /** POST: run a command in the persistent bash, answer with its whole output. */
  exec: '/v1/exec',
  /** POST: run a command, stream its output as NDJSON; an NDJSON request body streams stdin. */
  execStream: '/v1/exec/stream',
  /** PUT and GET `/v1/files/<path>`: this prefix plus the workspace-relative path. */
  filesPrefix: '/v1/files/',
  /**
   * POST: start a background process (with `?follow=1`: answered with its output followed to its
   * exit, its id and pid in PROCESS_ID_HEADER and PROCESS_PID_HEADER); GET: list them.
   */
  processes: '/v1/processes',
  /** GET with `Upgrade: websocket`: a terminal running `bash -i`. */
  pty: '/v1/pty',
  /**
   * POST, signed (no bearer): a warm Pod's one-shot bind to a session (docs/adr/0016); GET with the
   * session token: the session the agent serves.
   */
  bind: '/v1/bind',
  /** POST: run code in a context (a Jupyter kernel), stream its events as NDJSON (ADR 0033). */
  code: '/v1/code',
  /** GET: list the code contexts; POST: start one. `codeContextPath()` for one of them. */
  codeContexts: '/v1/code/contexts',
  /**
   * GET: stream the workspace out as a tar archive (summary in a trailer); PUT: replace the
   * workspace with an archive and verify its digest (docs/snapshots.md).
   */
  archive: '/v1/archive',
  /**
   * GET: the workspace digest and counts, without streaming anything; POST `{quiesce: true}`: the
   * same after stopping background processes, terminals and kernels (before a suspension).
   */
  archiveDigest: '/v1/archive/digest',
  /** GET: follow changes under a workspace directory as NDJSON (ADR 0033). */
  watch: '/v1/watch',
} as const;

/** What can follow `/v1/processes/<id>`. */
export type ProcessAction = 'output' | 'output/stream' | 'signal' | 'wait';

/**
 * Path of one background process (GET info, DELETE to remove) or of an action on it:
 * `processPath(id, 'signal')` = `/v1/processes/<id>/signal`. The id is percent-encoded, so a
 * malformed id stays one path segment (the agent answers 404 process-not-found).
 */
export function processPath(id: string, action?: ProcessAction): string {
  const base = `${AGENT_PATHS.processes}/${encodeURIComponent(id)}`;
  return action === undefined ? base : `${base}/${action}`;
}

/** What can follow `/v1/code/contexts/<name>`. */
export type CodeContextAction = 'interrupt' | 'restart';

/** Path of one code context (DELETE to stop and remove it) or of an action on it. */
export function codeContextPath(name: string, action?: CodeContextAction): string {
  const base = `${AGENT_PATHS.codeContexts}/${encodeURIComponent(name)}`;
  return action === undefined ? base : `${base}/${action}`;
}
