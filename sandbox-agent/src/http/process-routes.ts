/**
 * `/v1/processes`: background processes (processes/process-table.ts).
 *
 *   POST   /v1/processes                       start          201 ProcessInfo (Location: its path)
 *   POST   /v1/processes?follow=1              start+follow   200 NDJSON as output/stream (id, pid in headers)
 *   GET    /v1/processes                       list           200 {processes}
 *   GET    /v1/processes/<id>                  describe       200 ProcessInfo
 *   DELETE /v1/processes/<id>                  remove exited  204
 *   GET    /v1/processes/<id>/output           read           200 {process, stdout, stderr}
 *   GET    /v1/processes/<id>/output/stream    follow         200 NDJSON output lines, then exit
 *   POST   /v1/processes/<id>/signal           signal         200 ProcessInfo
 *   GET    /v1/processes/<id>/wait             wait for exit  200 ProcessInfo (state says whether)
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

import {
  AGENT_PATHS,
  DEFAULT_WAIT_SECONDS,
  MAX_READ_BYTES,
  NDJSON_CONTENT_TYPE,
  PROCESS_ID_HEADER,
  PROCESS_PID_HEADER,
  PROCESS_SIGNALS,
  type ProcessAction,
  processFollowQuerySchema,
  processOutputQuerySchema,
  processPath,
  processStartQuerySchema,
  processWaitQuerySchema,
} from '@sandbox-platform/api';

import { readChunk } from '../processes/chunks.js';
import type { ManagedProcess, ProcessStream } from '../processes/managed-process.js';
import type { Logger } from '../log.js';
import type { ProcessTable } from '../processes/process-table.js';
import { readJson } from './body.js';
import { HttpProblem, sendJson } from './problem.js';
import { validated, validatedQuery, VALIDATORS } from './validate.js';

/** What the process routes need. */
export interface ProcessRouteDeps {
  processes: ProcessTable;
  /** Limit of a start or signal body. */
  bodyLimit: number;
  /** A traced request's logger (its trace ids on the table's lines, tracing/trace-log.ts). */
  logger?: Logger;
}

/** A matched `/v1/processes...` path: the id and action when present. */
export interface ProcessPath {
  id?: string;
  action?: ProcessAction;
}

const PATTERN = /^\/v1\/processes(?:\/([^/]+)(?:\/(output\/stream|output|signal|wait))?)?$/;

/** The parts of a process path, or undefined when `path` is not one. */
export function matchProcessPath(path: string): ProcessPath | undefined {
  const match = PATTERN.exec(path);
  if (!match) return undefined;
  let id: string | undefined;
  try {
    id = match[1] === undefined ? undefined : decodeURIComponent(match[1]);
  } catch (err) {
    throw new HttpProblem('process-not-found', 'the process id is not valid percent-encoding', {
      cause: err,
    });
  }
  return { id, action: match[2] as ProcessAction | undefined };
}

/** Serves one process call; `at` is the matched path. 404 for a method the path does not have. */
export async function processRoute(
  req: IncomingMessage,
  res: ServerResponse,
  deps: ProcessRouteDeps,
  at: ProcessPath,
): Promise<void> {
  const handler = pick(req.method ?? '', at);
  if (!handler) throw new HttpProblem('not-found', `no route for ${req.method} ${AGENT_PATHS.processes}...`);
  await handler(req, res, deps, at.id ?? '');
}

type Handler = (
  req: IncomingMessage,
  res: ServerResponse,
  deps: ProcessRouteDeps,
  id: string,
) => Promise<void>;

const HANDLERS: Record<string, Handler> = {
  'POST ': start,
  'GET ': list,
  'GET .': describe,
  'DELETE .': remove,
  'GET .output': output,
  'GET .output/stream': follow,
  'POST .signal': signal,
  'GET .wait': wait,
};

function pick(method: string, at: ProcessPath): Handler | undefined {
  const key = `${method} ${at.id === undefined ? '' : '.'}${at.action ?? ''}`;
  return Object.hasOwn(HANDLERS, key) ? HANDLERS[key] : undefined;
}

/**
 * Starts a process. With `follow=1` the answer is its output followed from the first byte to the
 * exit (as GET .../output/stream), its id and pid in headers: a command's start, output and exit
 * in one round trip instead of two (the E2B API's commands, ADR 0035).
 */
async function start(req: IncomingMessage, res: ServerResponse, deps: ProcessRouteDeps): Promise<void> {
  const query = validatedQuery(VALIDATORS.processStartQuery, processStartQuerySchema, searchOf(req));
  const request = validated(VALIDATORS.processStart, await readJson(req, deps.bodyLimit));
  const proc = await deps.processes.start(request, deps.logger);
  res.setHeader('location', processPath(proc.id));
  if (query.follow !== 1) return sendJson(res, 201, proc.info());
  res.setHeader(PROCESS_ID_HEADER, proc.id);
  res.setHeader(PROCESS_PID_HEADER, String(proc.pid));
  await streamOutput(res, proc, { stdout: 0, stderr: 0 });
}

function list(_req: IncomingMessage, res: ServerResponse, deps: ProcessRouteDeps): Promise<void> {
  sendJson(res, 200, { processes: deps.processes.list() });
  return Promise.resolve();
}

function describe(
  _req: IncomingMessage,
  res: ServerResponse,
  deps: ProcessRouteDeps,
  id: string,
): Promise<void> {
  sendJson(res, 200, deps.processes.get(id).info());
  return Promise.resolve();
}

async function remove(
  _req: IncomingMessage,
  res: ServerResponse,
  deps: ProcessRouteDeps,
  id: string,
): Promise<void> {
  await deps.processes.remove(id, deps.logger);
  res.writeHead(204).end();
}

async function signal(
  req: IncomingMessage,
  res: ServerResponse,
  deps: ProcessRouteDeps,
  id: string,
): Promise<void> {
  const body = await readJson(req, deps.bodyLimit);
  // The allow-list gets its own slug (before the schema, whose enum is the same list).
  const name = typeof body === 'object' && body !== null ? (body as { signal?: unknown }).signal : undefined;
  if (typeof name === 'string' && !(PROCESS_SIGNALS as readonly string[]).includes(name)) {
    throw new HttpProblem(
      'signal-not-allowed',
      `signal "${name.slice(0, 32)}" is not allowed; use one of ${PROCESS_SIGNALS.join(', ')}`,
    );
  }
  const request = validated(VALIDATORS.processSignal, body);
  sendJson(res, 200, deps.processes.signal(id, request.signal, deps.logger));
}

async function wait(
  req: IncomingMessage,
  res: ServerResponse,
  deps: ProcessRouteDeps,
  id: string,
): Promise<void> {
  const query = validatedQuery(VALIDATORS.processWaitQuery, processWaitQuerySchema, searchOf(req));
  deps.processes.get(id); // 404 before waiting
  const info = await deps.processes.wait(
    id,
    (query.timeoutSeconds ?? DEFAULT_WAIT_SECONDS) * 1000,
    closedSignal(res),
  );
  if (!res.destroyed) sendJson(res, 200, info);
}

function output(
  req: IncomingMessage,
  res: ServerResponse,
  deps: ProcessRouteDeps,
  id: string,
): Promise<void> {
  const query = validatedQuery(VALIDATORS.processOutputQuery, processOutputQuerySchema, searchOf(req));
  const proc = deps.processes.get(id);
  const offsets = startOffsets(proc, query);
  const max = query.maxBytes ?? MAX_READ_BYTES;
  const final = !proc.running;
  sendJson(res, 200, {
    process: proc.info(),
    stdout: readChunk(proc.output.stdout, offsets.stdout, max, final),
    stderr: readChunk(proc.output.stderr, offsets.stderr, max, final),
  });
  return Promise.resolve();
}

/** Output events go out in pieces of at most this many bytes (one NDJSON line each). */
const FOLLOW_CHUNK_BYTES = 64 * 1024;

/**
 * Streams the output from the requested offsets as it arrives, then the exit. A follower that
 * reads slower than the process writes loses the bytes the ring drops meanwhile (each event says
 * how many it skipped); the agent holds no more than one chunk per stream for it.
 */
async function follow(
  req: IncomingMessage,
  res: ServerResponse,
  deps: ProcessRouteDeps,
  id: string,
): Promise<void> {
  const query = validatedQuery(VALIDATORS.processFollowQuery, processFollowQuerySchema, searchOf(req));
  const proc = deps.processes.get(id);
  await streamOutput(res, proc, startOffsets(proc, query));
}

/** The follow answer: 200 NDJSON of the output from `offsets` as it arrives, then the exit line. */
async function streamOutput(
  res: ServerResponse,
  proc: ManagedProcess,
  offsets: Record<ProcessStream, number>,
): Promise<void> {
  res.writeHead(200, { 'content-type': NDJSON_CONTENT_TYPE, 'cache-control': 'no-store' });
  res.flushHeaders();
  const gone = closedSignal(res);
  while (!gone.aborted) {
    const final = !proc.running;
    const wrote = writeAvailable(res, proc, offsets, final);
    if (final && !wrote) {
      const info = proc.info();
      res.end(
        `${JSON.stringify({ type: 'exit', exitCode: info.exitCode ?? 0, ...(info.signal ? { signal: info.signal } : {}) })}\n`,
      );
      return;
    }
    if (res.writableNeedDrain) {
      await until(gone, (wake) => {
        res.once('drain', wake);
        return () => res.off('drain', wake);
      });
    } else if (!wrote) {
      await until(gone, (wake) => proc.onChange(wake));
    }
  }
}

/** Writes one chunk per stream where there are bytes; true when it wrote anything. */
function writeAvailable(
  res: ServerResponse,
  proc: ManagedProcess,
  offsets: Record<ProcessStream, number>,
  final: boolean,
): boolean {
  let wrote = false;
  for (const stream of ['stdout', 'stderr'] as const) {
    const chunk = readChunk(proc.output[stream], offsets[stream], FOLLOW_CHUNK_BYTES, final);
    offsets[stream] = chunk.nextOffset;
    if (chunk.nextOffset === chunk.offset) continue;
    const { offset, skipped, data, encoding } = chunk;
    res.write(`${JSON.stringify({ type: stream, offset, skipped, data, encoding })}\n`);
    wrote = true;
  }
  return wrote;
}

/**
 * Resolves on the first of: the wake-up `arm` registers, the client leaving. `arm` returns the
 * removal of its listener; every listener is removed either way.
 */
function until(gone: AbortSignal, arm: (wake: () => void) => () => void): Promise<void> {
  return new Promise((resolve) => {
    let disarm = (): void => {};
    const wake = (): void => {
      gone.removeEventListener('abort', wake);
      disarm();
      resolve();
    };
    gone.addEventListener('abort', wake, { once: true });
    disarm = arm(wake);
  });
}

/** The requested offsets; 400 when one lies past the end of its stream. */
function startOffsets(
  proc: ManagedProcess,
  query: { stdoutOffset?: number; stderrOffset?: number },
): Record<ProcessStream, number> {
  const offsets = { stdout: query.stdoutOffset ?? 0, stderr: query.stderrOffset ?? 0 };
  for (const stream of ['stdout', 'stderr'] as const) {
    const size = proc.output[stream].size;
    if (offsets[stream] > size) {
      throw new HttpProblem(
        'invalid-request',
        `${stream}Offset ${offsets[stream]} is past the end of ${stream} (${size} bytes)`,
      );
    }
  }
  return offsets;
}

function searchOf(req: IncomingMessage): URLSearchParams {
  return new URL(req.url ?? '/', 'http://agent').searchParams;
}

/** Aborts when the response closes before it finished (the client went away). */
function closedSignal(res: ServerResponse): AbortSignal {
  const controller = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  return controller.signal;
}
