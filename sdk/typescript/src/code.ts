/**
 * The code interpreter and file watching of the gateway (docs/gateway.md, "Code and file
 * watching"): the calls behind SandboxClient.runCode, runCodeStream, the code context calls and
 * watch. Kept apart from client.ts, which delegates here with its own request function.
 */
import { ProtocolError } from './errors.js';
import { readJson, type CallSpec, type OkResponse } from './http.js';
import { ndjsonLines } from './ndjson.js';
import type { CodeContext, CodeEvent, CodeResult, RunCodeRequest, WatchLine, WatchRequest } from './types.js';

/** The client's request function (its namespace, deadline and retries) and its answer bound. */
export interface Caller {
  call(opts: CallOptionsLike, spec: CallSpec): Promise<OkResponse>;
  maxBytes: number;
}
type CallOptionsLike = string | { namespace?: string; signal?: AbortSignal; timeoutMs?: number } | undefined;

/** Longest NDJSON line of a run: a display with every MIME item the gateway allows (16 MiB) and framing. */
const MAX_CODE_LINE_BYTES = 17 * 1024 * 1024;
/** Longest watch line: two paths of 4096 characters, JSON-escaped. */
const MAX_WATCH_LINE_BYTES = 64 * 1024;
/** Beyond a run's own timeout: a kernel start (up to 60 s), the readiness wait, the way back. */
const RUN_MARGIN_S = 90;
const DEFAULT_RUN_TIMEOUT_S = 60;
const MAX_WAIT_S = 120;

const seg = encodeURIComponent;
const codePath = (name: string, rest = ''): string => `/v1/sessions/${seg(name)}/code${rest}`;
const json = (value: unknown): CallSpec['body'] => ({
  data: JSON.stringify(value),
  contentType: 'application/json',
});

function runDeadlineMs(req: RunCodeRequest): number {
  return (
    ((req.timeoutSeconds ?? DEFAULT_RUN_TIMEOUT_S) + (req.waitSeconds ?? MAX_WAIT_S) + RUN_MARGIN_S) * 1000
  );
}

/** A whole run (never retried: code may have side effects). */
export async function runCode(
  c: Caller,
  name: string,
  req: RunCodeRequest,
  opts: CallOptionsLike,
): Promise<CodeResult> {
  const ok = await c.call(opts, {
    method: 'POST',
    path: codePath(name),
    body: json(req),
    idempotent: false,
    timeoutMs: runDeadlineMs(req),
  });
  return readJson<CodeResult>(ok, c.maxBytes);
}

/** A run's events as they come; the last one is `end`. */
export async function* runCodeStream(
  c: Caller,
  name: string,
  req: RunCodeRequest,
  opts: CallOptionsLike,
): AsyncGenerator<CodeEvent> {
  const ok = await c.call(opts, {
    method: 'POST',
    path: codePath(name, '/stream'),
    body: json(req),
    idempotent: false,
    timeoutMs: runDeadlineMs(req),
  });
  try {
    if (!ok.response.body) throw new ProtocolError('the code stream has no body');
    for await (const value of ndjsonLines(ok.response.body, MAX_CODE_LINE_BYTES)) {
      const type = (value as { type?: unknown } | null)?.type;
      if (!['stdout', 'stderr', 'result', 'display', 'error', 'end'].includes(String(type))) {
        throw new ProtocolError(`unexpected code event: ${JSON.stringify(value).slice(0, 80)}`);
      }
      yield value as CodeEvent;
      if (type === 'end') return;
    }
    throw new ProtocolError('the code stream ended without an end event (connection lost?)');
  } finally {
    ok.done();
  }
}

/** The contexts of a session. */
export async function listCodeContexts(
  c: Caller,
  name: string,
  opts: CallOptionsLike,
): Promise<CodeContext[]> {
  const ok = await c.call(opts, { method: 'GET', path: codePath(name, '/contexts'), idempotent: true });
  return (await readJson<{ contexts: CodeContext[] }>(ok, c.maxBytes)).contexts;
}

/** Starts a context now (or returns the running one); retried (idempotent by name). */
export async function createCodeContext(
  c: Caller,
  name: string,
  context: { name: string; language?: 'python' },
  opts: CallOptionsLike,
): Promise<CodeContext> {
  const ok = await c.call(opts, {
    method: 'POST',
    path: codePath(name, '/contexts'),
    body: json(context),
    idempotent: true,
    timeoutMs: (MAX_WAIT_S + RUN_MARGIN_S) * 1000,
  });
  return readJson<CodeContext>(ok, c.maxBytes);
}

/** Interrupts or restarts a context (never retried). */
export async function codeContextAction(
  c: Caller,
  name: string,
  at: { context: string; action: 'interrupt' | 'restart' },
  opts: CallOptionsLike,
): Promise<CodeContext> {
  const { context, action } = at;
  const ok = await c.call(opts, {
    method: 'POST',
    path: codePath(name, `/contexts/${seg(context)}/${action}`),
    idempotent: false,
    timeoutMs: (MAX_WAIT_S + RUN_MARGIN_S) * 1000,
  });
  return readJson<CodeContext>(ok, c.maxBytes);
}

/** Removes a context (its variables are gone). */
export async function deleteCodeContext(
  c: Caller,
  name: string,
  context: string,
  opts: CallOptionsLike,
): Promise<void> {
  const ok = await c.call(opts, {
    method: 'DELETE',
    path: codePath(name, `/contexts/${seg(context)}`),
    idempotent: true,
  });
  ok.done();
  await ok.response.body?.cancel();
}

/**
 * Follows changes under a workspace directory: yields `watching`, then create/modify/delete/rename
 * (and `overflow`) lines, and ends after the `end` line (its reason says why: timeout, the session
 * suspended or deleted, the directory gone). Breaking out of the loop stops the watch.
 */
export async function* watch(
  c: Caller,
  name: string,
  req: WatchRequest,
  opts: CallOptionsLike,
): AsyncGenerator<WatchLine> {
  const query = new URLSearchParams();
  if (req.path !== undefined) query.set('path', req.path);
  if (req.recursive !== undefined) query.set('recursive', String(req.recursive));
  if (req.timeoutSeconds !== undefined) query.set('timeoutSeconds', String(req.timeoutSeconds));
  const qs = query.toString();
  const ok = await c.call(opts, {
    method: 'GET',
    path: `/v1/sessions/${seg(name)}/watch${qs ? `?${qs}` : ''}`,
    idempotent: false,
    timeoutMs: ((req.timeoutSeconds ?? 300) + 60) * 1000,
  });
  try {
    if (!ok.response.body) throw new ProtocolError('the watch has no body');
    for await (const value of ndjsonLines(ok.response.body, MAX_WATCH_LINE_BYTES)) {
      yield value as WatchLine;
      if ((value as { type?: unknown } | null)?.type === 'end') return;
    }
    throw new ProtocolError('the watch ended without an end line (connection lost?)');
  } finally {
    ok.done();
  }
}
