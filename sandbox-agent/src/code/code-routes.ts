/**
 * `/v1/code`: the code interpreter's routes (docs/adr/0033, contexts.ts).
 *
 *   POST   /v1/code                              run        200 NDJSON events, then one end line
 *   GET    /v1/code/contexts                     list       200 {contexts}
 *   POST   /v1/code/contexts                     start one  201 CodeContext (200 when it existed)
 *   DELETE /v1/code/contexts/<name>              remove     204
 *   POST   /v1/code/contexts/<name>/interrupt    interrupt  200 CodeContext
 *   POST   /v1/code/contexts/<name>/restart      restart    200 CodeContext (a new kernel)
 *
 * A run's kernel is started (or found) before the answer starts, so a sandbox without a kernel
 * gets 503 `code-unavailable` with the reason, not a stream; everything after that is the stream.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

import {
  type CodeContextAction,
  type CodeLanguage,
  codeContextCreateRequestSchema,
  type CodeContextCreateRequest,
  codeRunRequestSchema,
  type CodeRunRequest,
  DEFAULT_CODE_CONTEXT,
  DEFAULT_TIMEOUT_SECONDS,
  NDJSON_CONTENT_TYPE,
} from '@sandbox-platform/api';
import { Ajv } from 'ajv';

import { readJson } from '../http/body.js';
import { HttpProblem, sendJson } from '../http/problem.js';
import { validated } from '../http/validate.js';
import type { Logger } from '../log.js';
import type { CodeContext } from './context.js';
import { ContextBusyError } from './context.js';
import { type CodeContexts, TooManyContextsError } from './contexts.js';
import { KernelStartError } from './kernel.js';
import { RunOutput } from './run-output.js';

/** Largest run body: the code's characters at up to 4 UTF-8 bytes each, and the other fields. */
export const CODE_BODY_MAX_BYTES = 4 * 512 * 1024 + 4096;
/** Largest context create body. */
const CONTEXT_BODY_MAX_BYTES = 4096;

const ajv = new Ajv({ strict: true, allErrors: false, coerceTypes: false });
const validateRun = ajv.compile<CodeRunRequest>(codeRunRequestSchema);
const validateCreate = ajv.compile<CodeContextCreateRequest>(codeContextCreateRequestSchema);

/** What the code routes need. */
export interface CodeRouteDeps {
  contexts: CodeContexts;
  logger: Logger;
}

/** A matched `/v1/code...` path. */
export type CodePath =
  { kind: 'run' } | { kind: 'contexts' } | { kind: 'context'; name: string; action?: CodeContextAction };

const PATTERN = /^\/v1\/code(?:\/contexts(?:\/([^/]+)(?:\/(interrupt|restart))?)?)?$/;

/** The parts of a code path, or undefined when `path` is not one. */
export function matchCodePath(path: string): CodePath | undefined {
  const match = PATTERN.exec(path);
  if (!match) return undefined;
  if (!path.startsWith('/v1/code/contexts')) return { kind: 'run' };
  if (match[1] === undefined) return { kind: 'contexts' };
  let name: string;
  try {
    name = decodeURIComponent(match[1]);
  } catch (err) {
    throw new HttpProblem('context-not-found', 'the context name is not valid percent-encoding', {
      cause: err,
    });
  }
  return { kind: 'context', name, action: match[2] as CodeContextAction | undefined };
}

/** Serves one code call; 404 for a method the path does not have. */
export async function codeRoute(
  req: IncomingMessage,
  res: ServerResponse,
  deps: CodeRouteDeps,
  at: CodePath,
): Promise<void> {
  const method = req.method ?? '';
  try {
    if (at.kind === 'run' && method === 'POST') return await run(req, res, deps);
    if (at.kind === 'contexts' && method === 'GET') {
      return sendJson(res, 200, { contexts: deps.contexts.list().map((c) => c.info()) });
    }
    if (at.kind === 'contexts' && method === 'POST') return await create(req, res, deps);
    if (at.kind === 'context') return await onContext(method, res, deps, at);
  } catch (err) {
    throw asProblem(err);
  }
  throw new HttpProblem('not-found', `no route for ${method} /v1/code...`);
}

async function run(req: IncomingMessage, res: ServerResponse, deps: CodeRouteDeps): Promise<void> {
  const body = validated(validateRun, await readJson(req, CODE_BODY_MAX_BYTES));
  const context = await started(deps, body.context ?? DEFAULT_CODE_CONTEXT, body.language);
  const out = new RunOutput((line) => res.write(line + '\n'));
  const timeoutMs = (body.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS) * 1000;
  const { ended, cancel } = context.run(body.code, timeoutMs, out);
  res.writeHead(200, { 'content-type': NDJSON_CONTENT_TYPE, 'cache-control': 'no-store' });
  res.flushHeaders();
  let finished = false;
  // The caller going away interrupts the run (as a cancelled exec is stopped); the queue moves on.
  res.once('close', () => {
    if (!finished) cancel();
  });
  await ended;
  finished = true;
  res.end();
}

async function create(req: IncomingMessage, res: ServerResponse, deps: CodeRouteDeps): Promise<void> {
  const body = validated(validateCreate, await readJson(req, CONTEXT_BODY_MAX_BYTES));
  const existed = deps.contexts.get(body.name) !== undefined;
  const context = await started(deps, body.name, body.language);
  sendJson(res, existed ? 200 : 201, context.info());
}

async function onContext(
  method: string,
  res: ServerResponse,
  deps: CodeRouteDeps,
  at: { name: string; action?: CodeContextAction },
): Promise<void> {
  const context = deps.contexts.get(at.name);
  if (!context)
    throw new HttpProblem(
      'context-not-found',
      `no code context is named ${JSON.stringify(at.name.slice(0, 64))}`,
    );
  if (at.action === undefined && method === 'DELETE') {
    await deps.contexts.remove(at.name);
    res.writeHead(204).end();
    return;
  }
  if (method !== 'POST' || at.action === undefined) {
    throw new HttpProblem('not-found', `no route for ${method} /v1/code/contexts/<name>`);
  }
  if (at.action === 'interrupt') context.interrupt();
  else await context.restart();
  sendJson(res, 200, context.info());
}

/**
 * The context with its kernel running; a context this call created and whose kernel cannot start
 * is removed again, so failed attempts do not fill the table.
 */
async function started(
  deps: CodeRouteDeps,
  name: string,
  language: CodeLanguage = 'python',
): Promise<CodeContext> {
  const existed = deps.contexts.get(name);
  if (existed && existed.language !== language) {
    throw new HttpProblem(
      'invalid-request',
      `context ${name} runs ${String(existed.language)}, not ${String(language)}`,
    );
  }
  const context = existed ?? deps.contexts.getOrCreate(name, language);
  try {
    await context.ensureStarted();
  } catch (err) {
    if (!existed) await deps.contexts.remove(name);
    throw err;
  }
  return context;
}

function asProblem(err: unknown): unknown {
  if (err instanceof KernelStartError) {
    return new HttpProblem(
      'code-unavailable',
      `no Python kernel could be started in this sandbox (the sandbox-python image has one): ${err.message}`,
      { cause: err },
    );
  }
  if (err instanceof TooManyContextsError)
    return new HttpProblem('too-many-contexts', err.message, { cause: err });
  if (err instanceof ContextBusyError) return new HttpProblem('context-busy', err.message, { cause: err });
  return err;
}
