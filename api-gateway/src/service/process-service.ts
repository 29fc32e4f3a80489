/**
 * Background processes of a session, shared by the REST routes and the MCP tools: resolve the
 * Ready session through the exec service (same tenant, readiness and address rules as exec),
 * refuse sessions whose transport has no agent (KubernetesExec: 501), forward to the agent and
 * report activity. Processes live in the agent's memory only: they end with the Pod and are listed
 * nowhere else.
 */
import type { Readable } from 'node:stream';

import type {
  ProcessFollowQuery,
  ProcessInfo,
  ProcessList,
  ProcessOutput,
  ProcessOutputQuery,
  ProcessSignal,
  ProcessStartRequest,
} from '@sandbox-platform/api';

import type { ActivityReporter } from '../activity/reporter.js';
import { ProblemError } from '../errors.js';
import type { ProcessTransport, StartedFollow } from '../exec/agent/agent-processes.js';
import type { CallOptions } from '../exec/types.js';
import type { ExecTarget } from '../sessions/model.js';
import { activitySubject, type ExecService } from './exec-service.js';

/** Dependencies of the process service. */
export interface ProcessServiceDeps {
  execs: ExecService;
  activity: ActivityReporter;
  /** Absent when the gateway was built without the Agent's interactive calls (tests with fakes). */
  processes: ProcessTransport | undefined;
}

/** Where a call goes: namespace and session name as the caller gave them. */
export interface SessionRef {
  namespace: string;
  name: string;
}

/** Start, list, read, follow, signal, wait and remove background processes. */
export class ProcessService {
  constructor(private readonly d: ProcessServiceDeps) {}

  /** The Ready Agent session (waiting as exec does), or a problem. */
  async target(ref: SessionRef, opts: CallOptions = {}, waitSeconds?: number): Promise<ExecTarget> {
    const target = await this.d.execs.resolveTarget(ref.namespace, ref.name, waitSeconds, opts);
    if (target.transport !== 'Agent' || !this.d.processes) {
      throw new ProblemError(
        'not-supported',
        `session ${ref.name} uses execTransport ${target.transport}: background processes, terminals and ports need the Agent transport`,
      );
    }
    return target;
  }

  start(
    ref: SessionRef,
    req: ProcessStartRequest,
    opts: CallOptions = {},
    waitSeconds?: number,
  ): Promise<ProcessInfo> {
    return this.run(ref, opts, (p, t) => p.start(t, req, opts), waitSeconds);
  }

  /**
   * Starts a process and follows its output in one agent call (a command's start, output and exit
   * in one round trip); activity is held until the follow closes, as follow's is.
   */
  async startFollow(
    ref: SessionRef,
    req: ProcessStartRequest,
    query: { deadlineAt: number },
    opts: CallOptions = {},
  ): Promise<StartedFollow> {
    const target = await this.target(ref, opts);
    const end = this.d.activity.begin(activitySubject(target, opts));
    try {
      const started = await this.d.processes!.startFollow(target, req, query, opts);
      if (started.stream) started.stream.once('close', end);
      else end();
      return started;
    } catch (err) {
      end();
      throw err;
    }
  }

  list(ref: SessionRef, opts: CallOptions = {}): Promise<ProcessList> {
    return this.run(ref, opts, (p, t) => p.list(t, opts));
  }

  describe(ref: SessionRef, id: string, opts: CallOptions = {}): Promise<ProcessInfo> {
    return this.run(ref, opts, (p, t) => p.describe(t, id, opts));
  }

  remove(ref: SessionRef, id: string, opts: CallOptions = {}): Promise<void> {
    return this.run(ref, opts, (p, t) => p.remove(t, id, opts));
  }

  output(
    ref: SessionRef,
    id: string,
    query: ProcessOutputQuery,
    opts: CallOptions = {},
  ): Promise<ProcessOutput> {
    return this.run(ref, opts, (p, t) => p.output(t, id, query, opts));
  }

  /** The follow stream; activity is held until it closes (a followed process is in use). */
  async follow(
    ref: SessionRef,
    id: string,
    query: ProcessFollowQuery & { deadlineAt: number },
    opts: CallOptions = {},
  ): Promise<Readable> {
    const target = await this.target(ref, opts);
    const end = this.d.activity.begin(activitySubject(target, opts));
    try {
      const stream = await this.d.processes!.follow(target, id, query, opts);
      stream.once('close', end);
      return stream;
    } catch (err) {
      end();
      throw err;
    }
  }

  signal(ref: SessionRef, id: string, signal: ProcessSignal, opts: CallOptions = {}): Promise<ProcessInfo> {
    return this.run(ref, opts, (p, t) => p.signal(t, id, signal, opts));
  }

  /** Waits up to timeoutSeconds for the exit; the session counts as active meanwhile. */
  async wait(
    ref: SessionRef,
    id: string,
    timeoutSeconds: number,
    opts: CallOptions = {},
  ): Promise<ProcessInfo> {
    const target = await this.target(ref, opts);
    const end = this.d.activity.begin(activitySubject(target, opts));
    try {
      return await this.d.processes!.wait(target, id, timeoutSeconds, opts);
    } finally {
      end();
    }
  }

  private async run<T>(
    ref: SessionRef,
    opts: CallOptions,
    call: (p: ProcessTransport, t: ExecTarget) => Promise<T>,
    waitSeconds?: number,
  ): Promise<T> {
    const target = await this.target(ref, opts, waitSeconds);
    try {
      return await call(this.d.processes!, target);
    } finally {
      this.d.activity.touch(activitySubject(target, opts));
    }
  }
}
