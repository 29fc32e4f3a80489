/**
 * The code interpreter of a session (ADR 0033), shared by the REST routes and the MCP tools:
 * resolve the Ready session through the exec service (same tenant, readiness and address rules as
 * exec), refuse sessions without an agent (501), forward to the agent, count a run as activity
 * while it streams. `run()` gathers a run's events into one result; `stream()` passes them on.
 */
import type { Readable } from 'node:stream';

import type {
  CodeContext,
  CodeContextCreateRequest,
  CodeContextList,
  CodeDataEvent,
  CodeDropped,
  CodeEndEvent,
  CodeErrorEvent,
  CodeEvent,
  CodeRunRequest,
} from '@sandbox-platform/api';

import type { ActivityReporter } from '../activity/reporter.js';
import { ProblemError } from '../errors.js';
import type { CodeTransport } from '../exec/agent/agent-code.js';
import type { LineHold } from '../exec/guards/code-guard.js';
import type { CallOptions } from '../exec/types.js';
import type { ExecTarget } from '../sessions/model.js';
import { activitySubject, type ExecService } from './exec-service.js';
import type { SessionRef } from './process-service.js';

/** Dependencies of the code service. */
export interface CodeServiceDeps {
  execs: ExecService;
  activity: ActivityReporter;
  /** Absent when the gateway was built without the Agent's interactive calls (tests with fakes). */
  code: CodeTransport | undefined;
}

/** A whole run: its streams, results and displays in order, its error and its end. */
export interface CodeResult {
  status: CodeEndEvent['status'];
  stdout: string;
  stderr: string;
  /** Results (the last expression's value) and displays, in the order the kernel gave them. */
  outputs: Array<Omit<CodeDataEvent, 'executionCount'>>;
  error?: Omit<CodeErrorEvent, 'type'>;
  executionCount?: number;
  durationMs: number;
  contextReset: boolean;
  truncated: boolean;
  dropped: CodeDropped;
}

/** Options of a run call. */
export type RunOptions = CallOptions & { lineHold?: LineHold };

/** Run code, and manage the contexts it runs in. */
export class CodeService {
  constructor(private readonly d: CodeServiceDeps) {}

  /** The Ready Agent session (waiting as exec does), or a problem. */
  async target(ref: SessionRef, opts: CallOptions = {}, waitSeconds?: number): Promise<ExecTarget> {
    const target = await this.d.execs.resolveTarget(ref.namespace, ref.name, waitSeconds, opts);
    if (target.transport !== 'Agent' || !this.d.code) {
      throw new ProblemError(
        'not-supported',
        `session ${ref.name} uses execTransport ${target.transport}: the code interpreter needs the Agent transport`,
      );
    }
    return target;
  }

  /** The run's validated NDJSON events; the session counts as active until the stream closes. */
  async stream(
    ref: SessionRef,
    req: CodeRunRequest,
    opts: RunOptions = {},
    waitSeconds?: number,
  ): Promise<Readable> {
    const target = await this.target(ref, opts, waitSeconds);
    const end = this.d.activity.begin(activitySubject(target, opts));
    try {
      const stream = await this.d.code!.run(target, req, opts);
      stream.once('close', end);
      return stream;
    } catch (err) {
      end();
      throw err;
    }
  }

  /** A whole run gathered into one result. */
  async run(
    ref: SessionRef,
    req: CodeRunRequest,
    opts: RunOptions = {},
    waitSeconds?: number,
  ): Promise<CodeResult> {
    return collectRun(await this.stream(ref, req, opts, waitSeconds));
  }

  list(ref: SessionRef, opts: CallOptions = {}): Promise<CodeContextList> {
    return this.call(ref, opts, (c, t) => c.list(t, opts));
  }

  create(ref: SessionRef, req: CodeContextCreateRequest, opts: CallOptions = {}): Promise<CodeContext> {
    return this.call(ref, opts, (c, t) => c.create(t, req, opts));
  }

  remove(ref: SessionRef, name: string, opts: CallOptions = {}): Promise<void> {
    return this.call(ref, opts, (c, t) => c.remove(t, name, opts));
  }

  interrupt(ref: SessionRef, name: string, opts: CallOptions = {}): Promise<CodeContext> {
    return this.call(ref, opts, (c, t) => c.act(t, name, 'interrupt', opts));
  }

  restart(ref: SessionRef, name: string, opts: CallOptions = {}): Promise<CodeContext> {
    return this.call(ref, opts, (c, t) => c.act(t, name, 'restart', opts));
  }

  private async call<T>(
    ref: SessionRef,
    opts: CallOptions,
    fn: (c: CodeTransport, t: ExecTarget) => Promise<T>,
  ): Promise<T> {
    const target = await this.target(ref, opts);
    try {
      return await fn(this.d.code!, target);
    } finally {
      this.d.activity.touch(activitySubject(target, opts));
    }
  }
}

/** What a run's lines gather into before its end line. */
interface Gathered {
  stdout: string[];
  stderr: string[];
  outputs: CodeResult['outputs'];
  error?: CodeResult['error'];
  executionCount?: number;
  end?: CodeEndEvent;
}

function gather(g: Gathered, ev: CodeEvent): void {
  if (ev.type === 'stdout' || ev.type === 'stderr') g[ev.type].push(ev.text);
  else if (ev.type === 'error') g.error = { name: ev.name, value: ev.value, traceback: ev.traceback };
  else if (ev.type === 'end') g.end = ev;
  else {
    const { executionCount: count, ...item } = ev as CodeDataEvent;
    if (count !== undefined) g.executionCount = count;
    g.outputs.push(item);
  }
}

/** Reads a validated run stream (code-guard.ts) to its end line and gathers it. */
export async function collectRun(stream: Readable): Promise<CodeResult> {
  const g: Gathered = { stdout: [], stderr: [], outputs: [] };
  let partial = '';
  for await (const chunk of stream as AsyncIterable<Buffer | string>) {
    const lines = (partial + chunk.toString()).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) if (line.length > 0) gather(g, JSON.parse(line) as CodeEvent);
  }
  const end = g.end;
  if (!end) throw new ProblemError('agent-protocol-error', 'the run stream ended without an end line');
  const result: CodeResult = {
    status: end.status,
    stdout: g.stdout.join(''),
    stderr: g.stderr.join(''),
    outputs: g.outputs,
    durationMs: end.durationMs,
    contextReset: end.contextReset,
    truncated: end.truncated,
    dropped: end.dropped,
  };
  if (g.error) result.error = g.error;
  const count = end.executionCount ?? g.executionCount;
  if (count !== undefined) result.executionCount = count;
  return result;
}
