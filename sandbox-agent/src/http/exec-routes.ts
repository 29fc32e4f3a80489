/**
 * `POST /v1/exec` and `POST /v1/exec/stream`. A JSON body may carry the command's stdin (`stdin`,
 * bounded); a stream request with an NDJSON body (`Content-Type: application/x-ndjson`) has the
 * request on its first line and then streams stdin as lines while the command runs.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

import { NDJSON_CONTENT_TYPE } from '@sandbox-platform/api';

import { NdjsonWriter, OutputCollector } from '../exec/observers.js';
import type { Logger } from '../log.js';
import { parseExecRequest } from '../exec/request.js';
import { streamedStdin } from '../exec/stdin.js';
import type { OutputObserver } from '../shell/execution.js';
import { CommandTiming } from '../tracing/command-timing.js';
import type { ExecRequest, ExecResult } from '../shell/persistent-shell.js';
import { bodyChunks, parseJson, readBody } from './body.js';
import type { ByteBudget } from './byte-budget.js';
import { LineTooLongError, NdjsonLineReader } from './ndjson-lines.js';
import { HttpProblem, sendJson } from './problem.js';

/** The part of the shell the routes use (a narrow port, so the server can be tested alone). */
export interface CommandRunner {
  /** `logger`: where the command's own lines go (the request's, with its trace ids); else the runner's. */
  run(
    request: ExecRequest,
    observer: OutputObserver,
    signal?: AbortSignal,
    logger?: Logger,
  ): Promise<ExecResult>;
}

/** Limits the exec routes enforce. */
export interface ExecRouteOptions {
  /** Bytes of a request other than its stdin (the command text lives there). */
  bodyLimit: number;
  /** Decoded stdin bytes one JSON request may carry. */
  stdinMaxBytes: number;
  /** Decoded stdin bytes held by calls that wait for the shell, all together. */
  stdinBudget: ByteBudget;
  /** A traced request's logger (its trace ids on the command's lines, tracing/trace-log.ts). */
  logger?: Logger;
}

/**
 * Room for the JSON spelling of the largest stdin: base64 is 4/3 of the bytes, plus the field
 * name and quotes. Text stdin that JSON must escape heavily may not fit: send binary as base64.
 */
function stdinAllowance(stdinMaxBytes: number): number {
  return Math.ceil(stdinMaxBytes / 3) * 4 + 64;
}

/** Runs a command and answers with its whole (capped) output. */
export async function execRoute(
  req: IncomingMessage,
  res: ServerResponse,
  runner: CommandRunner,
  opts: ExecRouteOptions,
): Promise<void> {
  // A sampled traceparent: the command's timings go back in a Server-Timing header (tracing/).
  const timing = CommandTiming.of(req);
  const request = await readJsonRequest(req, opts);
  const collector = new OutputCollector();
  const result = await withStdinBudget(request, opts.stdinBudget, () =>
    runner.run(
      request,
      timing ? timing.observe(collector) : collector,
      cancelWhenClientLeaves(res),
      opts.logger,
    ),
  );
  if (timing) res.setHeader('server-timing', timing.header(result));
  sendJson(res, 200, collector.response(result));
}

/** Runs a command and streams its output as NDJSON (stdin from the body when it is NDJSON too). */
export async function execStreamRoute(
  req: IncomingMessage,
  res: ServerResponse,
  runner: CommandRunner,
  opts: ExecRouteOptions,
): Promise<void> {
  // A sampled traceparent: the command's timings follow the body as a Server-Timing trailer.
  const timing = CommandTiming.of(req);
  const request = isNdjson(req) ? await readNdjsonRequest(req, opts) : await readJsonRequest(req, opts);
  if (timing) res.setHeader('trailer', 'server-timing');
  const writer = new NdjsonWriter(res);
  const result = await withStdinBudget(request, opts.stdinBudget, () =>
    runner.run(request, timing ? timing.observe(writer) : writer, cancelWhenClientLeaves(res), opts.logger),
  );
  if (timing) res.addTrailers({ 'server-timing': timing.header(result) });
  writer.finish(result);
}

function isNdjson(req: IncomingMessage): boolean {
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  return type === NDJSON_CONTENT_TYPE;
}

/** A JSON body: the fields but stdin count against bodyLimit, the decoded stdin against stdinMaxBytes. */
async function readJsonRequest(req: IncomingMessage, opts: ExecRouteOptions): Promise<ExecRequest> {
  const raw = await readBody(req, opts.bodyLimit + stdinAllowance(opts.stdinMaxBytes));
  const body = parseJson(raw);
  const rest = raw.length - stdinFieldBytes(body);
  if (rest > opts.bodyLimit) {
    throw new HttpProblem(
      'payload-too-large',
      `the body is ${rest} bytes without stdin, the limit is ${opts.bodyLimit}`,
    );
  }
  return parseExecRequest(body, opts);
}

/** About the bytes the `stdin` member takes in the body (exact for the usual JSON spelling). */
function stdinFieldBytes(body: unknown): number {
  if (typeof body !== 'object' || body === null || !('stdin' in body) || typeof body.stdin !== 'string')
    return 0;
  return Buffer.byteLength(JSON.stringify(body.stdin));
}

/**
 * An NDJSON body: the request on the first line (bounded like a JSON body, without stdin), then
 * stdin lines, read by the shell's stdin pipe only while the command runs.
 */
async function readNdjsonRequest(req: IncomingMessage, opts: ExecRouteOptions): Promise<ExecRequest> {
  const lines = new NdjsonLineReader(bodyChunks(req));
  let first: Buffer | undefined;
  try {
    first = await lines.next(opts.bodyLimit);
  } catch (err) {
    if (!(err instanceof LineTooLongError)) throw err;
    throw new HttpProblem('payload-too-large', `the request line exceeds ${opts.bodyLimit} bytes`, {
      cause: err,
    });
  }
  if (first === undefined) throw new HttpProblem('invalid-request', 'the body has no request line');
  const request = parseExecRequest(parseJson(first, 'the request line'), opts);
  if (request.stdin) {
    throw new HttpProblem(
      'invalid-request',
      'in an NDJSON request, stdin comes as {"type":"stdin"} lines after the request line',
    );
  }
  request.stdin = streamedStdin(lines);
  return request;
}

/** Holds the request's buffered stdin against the budget while the call waits and runs (503 beyond). */
async function withStdinBudget<T>(
  request: ExecRequest,
  budget: ByteBudget,
  run: () => Promise<T>,
): Promise<T> {
  const bytes = request.stdin?.heldBytes ?? 0;
  if (!budget.take(bytes)) {
    throw new HttpProblem(
      'shell-unavailable',
      `${budget.used} bytes of stdin wait for the shell already (the limit is ${budget.limit})`,
    );
  }
  try {
    return await run();
  } finally {
    budget.give(bytes);
  }
}

/**
 * An abort signal that fires when the connection closes before the response was finished: the
 * command is cancelled (queued: dropped; running: its processes killed), so a vanished client
 * never leaves work running in the shell.
 */
function cancelWhenClientLeaves(res: ServerResponse): AbortSignal {
  const controller = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  return controller.signal;
}
