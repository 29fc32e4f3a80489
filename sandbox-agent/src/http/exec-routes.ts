/** `POST /v1/exec` and `POST /v1/exec/stream`. */
import type { IncomingMessage, ServerResponse } from 'node:http';

import { NdjsonWriter, OutputCollector } from '../exec/observers.js';
import { parseExecRequest } from '../exec/request.js';
import type { OutputObserver } from '../shell/execution.js';
import type { ExecRequest, ExecResult } from '../shell/persistent-shell.js';
import { readJson } from './body.js';
import { sendJson } from './problem.js';

/** The part of the shell the routes use (a narrow port, so the server can be tested alone). */
export interface CommandRunner {
  run(request: ExecRequest, observer: OutputObserver, signal?: AbortSignal): Promise<ExecResult>;
}

/** Limits the exec routes enforce. */
export interface ExecRouteOptions {
  bodyLimit: number;
}

/** Runs a command and answers with its whole (capped) output. */
export async function execRoute(
  req: IncomingMessage,
  res: ServerResponse,
  runner: CommandRunner,
  opts: ExecRouteOptions,
): Promise<void> {
  const request = parseExecRequest(await readJson(req, opts.bodyLimit));
  const collector = new OutputCollector();
  const result = await runner.run(request, collector, cancelWhenClientLeaves(res));
  sendJson(res, 200, collector.response(result));
}

/** Runs a command and streams its output as NDJSON. */
export async function execStreamRoute(
  req: IncomingMessage,
  res: ServerResponse,
  runner: CommandRunner,
  opts: ExecRouteOptions,
): Promise<void> {
  const request = parseExecRequest(await readJson(req, opts.bodyLimit));
  const writer = new NdjsonWriter(res);
  const result = await runner.run(request, writer, cancelWhenClientLeaves(res));
  writer.finish(result);
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
