/**
 * Background processes of a session over the Agent transport (ADR 0018): the agent's
 * `/v1/processes` calls with the session's derived token, through the transport's pool and
 * delivery rules (connect-only retries, an overall deadline per call). Answers are bounded and
 * validated against the wire contract (process-json.ts); agent problems pass through as the
 * gateway's (process-not-found 404, signal-not-allowed 400, process-running 409 ...).
 */
import type { Readable } from 'node:stream';

import {
  AGENT_PATHS,
  MAX_WAIT_SECONDS,
  PROCESS_ID_HEADER,
  PROCESS_ID_PATTERN,
  PROCESS_PID_HEADER,
  processPath,
  type ProcessFollowQuery,
  type ProcessInfo,
  type ProcessList,
  type ProcessOutput,
  type ProcessOutputQuery,
  type ProcessSignal,
  type ProcessStartRequest,
} from '@sandbox-platform/api';
import type { ValidateFunction } from 'ajv';

import { ProblemError } from '../../errors.js';
import type { ExecTarget } from '../../sessions/model.js';
import type { AgentRequest, AgentResponse } from './agent-http.js';
import type { AgentTransport } from './agent-transport.js';
import { AgentProtocolError } from './agent-wire.js';
import { ProcessFollowGuard } from '../guards/process-follow-guard.js';
import {
  parseProcessJson,
  validateProcessInfo,
  validateProcessList,
  validateProcessOutput,
} from './process-json.js';
import type { CallOptions } from '../types.js';

/** Deadline of a call that does not wait for anything in the sandbox (start, list, signal...). */
export const PROCESS_CALL_TIMEOUT_MS = 15_000;
/** Largest describe, start, signal or wait answer (one process: about 5 KiB with a long command). */
const INFO_LIMIT = 64 * 1024;
/** Largest list answer: 4096 processes' worth of INFO_LIMIT would be too much; 2 MiB is plenty. */
const LIST_LIMIT = 2 * 1024 * 1024;
/**
 * Largest output answer: two chunks of at most MAX_READ_BYTES each, JSON-escaped (6 bytes per
 * byte at worst), plus the process.
 */
const OUTPUT_LIMIT = 2 * 6 * 1024 * 1024 + INFO_LIMIT;

/** A process started and followed in one call (ProcessTransport.startFollow). */
export interface StartedFollow {
  id: string;
  pid: number;
  /**
   * Its output from offset 0, validated as a follow's, ending with the exit or at the deadline;
   * undefined when the agent answered a plain start (an agent older than `follow=1`): follow it.
   */
  stream?: Readable;
}

const PROCESS_ID = new RegExp(PROCESS_ID_PATTERN);
const PID = /^[1-9][0-9]{0,9}$/;

/** What the process routes and MCP tools call for an Agent session. */
export interface ProcessTransport {
  start(target: ExecTarget, req: ProcessStartRequest, opts?: CallOptions): Promise<ProcessInfo>;
  /**
   * Starts a process and follows its output in one call (`POST /v1/processes?follow=1`): the
   * start, the output and the exit in one round trip. The follow ends without an exit line at
   * `deadlineAt` (follow again from the offsets).
   */
  startFollow(
    target: ExecTarget,
    req: ProcessStartRequest,
    query: { deadlineAt: number },
    opts?: CallOptions,
  ): Promise<StartedFollow>;
  list(target: ExecTarget, opts?: CallOptions): Promise<ProcessList>;
  describe(target: ExecTarget, id: string, opts?: CallOptions): Promise<ProcessInfo>;
  remove(target: ExecTarget, id: string, opts?: CallOptions): Promise<void>;
  output(
    target: ExecTarget,
    id: string,
    query: ProcessOutputQuery,
    opts?: CallOptions,
  ): Promise<ProcessOutput>;
  /** The NDJSON follow, validated line by line; ends without an exit line at `deadlineAt`. */
  follow(
    target: ExecTarget,
    id: string,
    query: ProcessFollowQuery & { deadlineAt: number },
    opts?: CallOptions,
  ): Promise<Readable>;
  signal(target: ExecTarget, id: string, signal: ProcessSignal, opts?: CallOptions): Promise<ProcessInfo>;
  wait(target: ExecTarget, id: string, timeoutSeconds: number, opts?: CallOptions): Promise<ProcessInfo>;
}

/** ProcessTransport over the agent's HTTP API. */
export class AgentProcesses implements ProcessTransport {
  constructor(private readonly agent: AgentTransport) {}

  async start(target: ExecTarget, req: ProcessStartRequest, opts: CallOptions = {}): Promise<ProcessInfo> {
    const body = Buffer.from(JSON.stringify(req));
    return this.json(target, { method: 'POST', path: AGENT_PATHS.processes, token: '', body }, opts, {
      limit: INFO_LIMIT,
      validate: validateProcessInfo,
    });
  }

  async startFollow(
    target: ExecTarget,
    req: ProcessStartRequest,
    query: { deadlineAt: number },
    opts: CallOptions = {},
  ): Promise<StartedFollow> {
    const body = Buffer.from(JSON.stringify(req));
    const path = `${AGENT_PATHS.processes}?follow=1`;
    const hardDeadline = query.deadlineAt + PROCESS_CALL_TIMEOUT_MS;
    const res = await this.agent.send(target, { method: 'POST', path, token: '', body }, hardDeadline, opts);
    await this.agent.expectOk(res, target, hardDeadline);
    if (res.status === 201) {
      // An agent without follow=1 (an image older than the gateway) ignores the query: a plain start.
      const info = await this.parse(
        res,
        { target, deadlineAt: hardDeadline, opts },
        { limit: INFO_LIMIT, validate: validateProcessInfo },
      );
      return { id: info.id, pid: info.pid };
    }
    const id = res.headers[PROCESS_ID_HEADER] ?? '';
    const pid = res.headers[PROCESS_PID_HEADER] ?? '';
    if (res.status !== 200 || !PROCESS_ID.test(id) || !PID.test(pid)) {
      res.body.destroy();
      throw new ProblemError(
        'agent-protocol-error',
        `the sandbox agent's answer is malformed: a started and followed process needs status 200 and its ${PROCESS_ID_HEADER} and ${PROCESS_PID_HEADER} headers`,
      );
    }
    return { id, pid: Number(pid), stream: this.guarded(res, target, query.deadlineAt, opts) };
  }

  list(target: ExecTarget, opts: CallOptions = {}): Promise<ProcessList> {
    return this.json(target, { method: 'GET', path: AGENT_PATHS.processes, token: '' }, opts, {
      limit: LIST_LIMIT,
      validate: validateProcessList,
    });
  }

  describe(target: ExecTarget, id: string, opts: CallOptions = {}): Promise<ProcessInfo> {
    return this.json(target, { method: 'GET', path: processPath(id), token: '' }, opts, {
      limit: INFO_LIMIT,
      validate: validateProcessInfo,
    });
  }

  async remove(target: ExecTarget, id: string, opts: CallOptions = {}): Promise<void> {
    const deadlineAt = Date.now() + PROCESS_CALL_TIMEOUT_MS;
    const res = await this.agent.send(
      target,
      { method: 'DELETE', path: processPath(id), token: '' },
      deadlineAt,
      opts,
    );
    await this.agent.expectOk(res, target, deadlineAt);
    await this.agent.read(res, INFO_LIMIT, { target, deadlineAt });
  }

  output(
    target: ExecTarget,
    id: string,
    query: ProcessOutputQuery,
    opts: CallOptions = {},
  ): Promise<ProcessOutput> {
    const path = processPath(id, 'output') + search(query);
    return this.json(target, { method: 'GET', path, token: '' }, opts, {
      limit: OUTPUT_LIMIT,
      validate: validateProcessOutput,
    });
  }

  async follow(
    target: ExecTarget,
    id: string,
    query: ProcessFollowQuery & { deadlineAt: number },
    opts: CallOptions = {},
  ): Promise<Readable> {
    const { deadlineAt, ...offsets } = query;
    const path = processPath(id, 'output/stream') + search(offsets);
    // The transport's own deadline comes a little after the follow's: the follow ends cleanly first.
    const hardDeadline = deadlineAt + PROCESS_CALL_TIMEOUT_MS;
    const res = await this.agent.send(target, { method: 'GET', path, token: '' }, hardDeadline, opts);
    await this.agent.expectOk(res, target, hardDeadline);
    return this.guarded(res, target, deadlineAt, opts);
  }

  /** A follow answer through the follow guard, cut cleanly (no exit line) at `deadlineAt`. */
  private guarded(res: AgentResponse, target: ExecTarget, deadlineAt: number, opts: CallOptions): Readable {
    const guard = new ProcessFollowGuard(opts.meter);
    const upstream = res.body;
    upstream.on('error', (err) => guard.destroy(this.agent.streamProblem(err, target)));
    guard.on('close', () => upstream.destroy());
    // At the deadline the follow ends without an exit line: the caller follows again from its offsets.
    const timer = setTimeout(
      () => {
        upstream.unpipe(guard);
        upstream.destroy();
        guard.endEarly();
      },
      Math.max(0, deadlineAt - Date.now()),
    );
    guard.once('close', () => clearTimeout(timer));
    return upstream.pipe(guard);
  }

  signal(
    target: ExecTarget,
    id: string,
    signal: ProcessSignal,
    opts: CallOptions = {},
  ): Promise<ProcessInfo> {
    const body = Buffer.from(JSON.stringify({ signal }));
    return this.json(target, { method: 'POST', path: processPath(id, 'signal'), token: '', body }, opts, {
      limit: INFO_LIMIT,
      validate: validateProcessInfo,
    });
  }

  wait(target: ExecTarget, id: string, timeoutSeconds: number, opts: CallOptions = {}): Promise<ProcessInfo> {
    const seconds = Math.min(Math.max(0, timeoutSeconds), MAX_WAIT_SECONDS);
    const path = processPath(id, 'wait') + search({ timeoutSeconds: seconds });
    return this.json(target, { method: 'GET', path, token: '' }, opts, {
      limit: INFO_LIMIT,
      validate: validateProcessInfo,
      timeoutMs: seconds * 1000 + PROCESS_CALL_TIMEOUT_MS,
    });
  }

  /** One call with a bounded, validated JSON answer. */
  private async json<T>(
    target: ExecTarget,
    req: AgentRequest,
    opts: CallOptions,
    answer: { limit: number; validate: ValidateFunction<T>; timeoutMs?: number },
  ): Promise<T> {
    const deadlineAt = Date.now() + (answer.timeoutMs ?? PROCESS_CALL_TIMEOUT_MS);
    const res = await this.agent.send(target, req, deadlineAt, opts);
    await this.agent.expectOk(res, target, deadlineAt);
    return this.parse(res, { target, deadlineAt, opts }, answer);
  }

  /** A JSON answer read whole (bounded) and validated. */
  private async parse<T>(
    res: AgentResponse,
    call: { target: ExecTarget; deadlineAt: number; opts: CallOptions },
    answer: { limit: number; validate: ValidateFunction<T> },
  ): Promise<T> {
    const { target, deadlineAt, opts } = call;
    const body = await this.agent.read(res, answer.limit, {
      target,
      deadlineAt,
      ...(opts.hold ? { hold: opts.hold } : {}),
    });
    try {
      return parseProcessJson(body, answer.validate);
    } catch (err) {
      if (err instanceof AgentProtocolError) {
        throw new ProblemError(
          'agent-protocol-error',
          `the sandbox agent's answer is malformed: ${err.message}`,
          {
            cause: err,
          },
        );
      }
      throw err;
    }
  }
}

/** `?a=1&b=2` of the defined members (numbers only: nothing needs escaping), or ''. */
function search(query: { [key: string]: number | undefined } | ProcessOutputQuery): string {
  const parts = Object.entries(query)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}=${String(v)}`);
  return parts.length === 0 ? '' : `?${parts.join('&')}`;
}
