/**
 * The code interpreter of a session over the Agent transport (ADR 0033): the agent's `/v1/code`
 * calls with the session's derived token, through the transport's pool and delivery rules. The
 * run's NDJSON is checked line by line (code-guard.ts); context answers are bounded and validated
 * against the wire contract; agent problems pass through (code-unavailable 503,
 * context-not-found 404, too-many-contexts 409, context-busy 409).
 */
import type { Readable } from 'node:stream';

import {
  AGENT_PATHS,
  type CodeContext,
  type CodeContextAction,
  type CodeContextCreateRequest,
  type CodeContextList,
  codeContextListSchema,
  codeContextPath,
  codeContextSchema,
  type CodeRunRequest,
  DEFAULT_TIMEOUT_SECONDS,
} from '@sandbox-platform/api';
import { Ajv, type ValidateFunction } from 'ajv';

import { ProblemError } from '../../errors.js';
import type { ExecTarget } from '../../sessions/model.js';
import type { AgentRequest } from './agent-http.js';
import type { AgentTransport } from './agent-transport.js';
import { AgentProtocolError } from './agent-wire.js';
import { CodeStreamGuard, type LineHold } from '../guards/code-guard.js';
import { parseProcessJson } from './process-json.js';
import type { CallOptions } from '../types.js';

/**
 * Time a run may take beyond its own timeout: a kernel start (the agent waits up to 60 s), the
 * interrupt grace (3 s) and the way back.
 */
export const CODE_RUN_MARGIN_MS = 75_000;
/** Deadline of a context call; a restart waits for a new kernel (up to 60 s in the agent). */
const CONTEXT_CALL_TIMEOUT_MS = 75_000;
/** Largest context or list answer (4 contexts by default; 256 KiB is plenty). */
const CONTEXT_LIMIT = 256 * 1024;

const ajv = new Ajv({ allErrors: false, strict: true });
const validateContext: ValidateFunction<CodeContext> = ajv.compile<CodeContext>(codeContextSchema);
const validateList: ValidateFunction<CodeContextList> = ajv.compile<CodeContextList>(codeContextListSchema);

/** What the code routes and MCP tools call for an Agent session. */
export interface CodeTransport {
  /** The run's validated NDJSON events; resolves once the agent accepted it (its kernel is up). */
  run(
    target: ExecTarget,
    req: CodeRunRequest,
    opts?: CallOptions & { lineHold?: LineHold },
  ): Promise<Readable>;
  list(target: ExecTarget, opts?: CallOptions): Promise<CodeContextList>;
  create(target: ExecTarget, req: CodeContextCreateRequest, opts?: CallOptions): Promise<CodeContext>;
  remove(target: ExecTarget, name: string, opts?: CallOptions): Promise<void>;
  act(target: ExecTarget, name: string, action: CodeContextAction, opts?: CallOptions): Promise<CodeContext>;
}

/** CodeTransport over the agent's HTTP API. */
export class AgentCode implements CodeTransport {
  constructor(private readonly agent: AgentTransport) {}

  async run(
    target: ExecTarget,
    req: CodeRunRequest,
    opts: CallOptions & { lineHold?: LineHold } = {},
  ): Promise<Readable> {
    const deadlineAt =
      Date.now() + (req.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS) * 1000 + CODE_RUN_MARGIN_MS;
    const body = Buffer.from(JSON.stringify(req));
    const request: AgentRequest = { method: 'POST', path: AGENT_PATHS.code, token: '', body };
    const res = await this.agent.send(target, request, deadlineAt, opts);
    await this.agent.expectOk(res, target, deadlineAt);
    const guard = new CodeStreamGuard(opts.meter, opts.lineHold);
    const upstream = res.body;
    upstream.on('error', (err) => guard.destroy(this.agent.streamProblem(err, target)));
    // The caller leaving (or the guard failing) closes the agent connection: the agent interrupts the run.
    guard.on('close', () => upstream.destroy());
    return upstream.pipe(guard);
  }

  list(target: ExecTarget, opts: CallOptions = {}): Promise<CodeContextList> {
    return this.json(
      target,
      { method: 'GET', path: AGENT_PATHS.codeContexts, token: '' },
      opts,
      validateList,
    );
  }

  create(target: ExecTarget, req: CodeContextCreateRequest, opts: CallOptions = {}): Promise<CodeContext> {
    const body = Buffer.from(JSON.stringify(req));
    const request: AgentRequest = { method: 'POST', path: AGENT_PATHS.codeContexts, token: '', body };
    return this.json(target, request, opts, validateContext);
  }

  async remove(target: ExecTarget, name: string, opts: CallOptions = {}): Promise<void> {
    const deadlineAt = Date.now() + CONTEXT_CALL_TIMEOUT_MS;
    const res = await this.agent.send(
      target,
      { method: 'DELETE', path: codeContextPath(name), token: '' },
      deadlineAt,
      opts,
    );
    await this.agent.expectOk(res, target, deadlineAt);
    await this.agent.read(res, CONTEXT_LIMIT, { target, deadlineAt });
  }

  act(
    target: ExecTarget,
    name: string,
    action: CodeContextAction,
    opts: CallOptions = {},
  ): Promise<CodeContext> {
    const request: AgentRequest = { method: 'POST', path: codeContextPath(name, action), token: '' };
    return this.json(target, request, opts, validateContext);
  }

  private async json<T>(
    target: ExecTarget,
    req: AgentRequest,
    opts: CallOptions,
    validate: ValidateFunction<T>,
  ): Promise<T> {
    const deadlineAt = Date.now() + CONTEXT_CALL_TIMEOUT_MS;
    const res = await this.agent.send(target, req, deadlineAt, opts);
    await this.agent.expectOk(res, target, deadlineAt);
    const body = await this.agent.read(res, CONTEXT_LIMIT, { target, deadlineAt });
    try {
      return parseProcessJson(body, validate);
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
