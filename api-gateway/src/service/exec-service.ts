/**
 * Exec and file operations shared by the REST routes and the MCP tools: find the session in the
 * informer cache, resume it when it is suspended (any call that resolves a target does: exec,
 * files, processes, the terminal, port routes and previews: wake on traffic, ADR 0015), wait
 * (bounded) for it to be Ready, pick its
 * transport, forward, and report activity off the request path. The pod address only ever comes
 * from the session's status, and is dialed only once the gateway's Pod cache ties it to the
 * session (sessions/pod-identity.ts).
 */
import type { Readable } from 'node:stream';

import type { PublicExecRequest } from '@sandbox-platform/api';

import type { ActivityReporter } from '../activity/reporter.js';
import type { ExecLimits } from '../config.js';
import { ProblemError } from '../errors.js';
import type { GatewayMetrics } from '../metrics.js';
import type { ExecTarget, TransportKind } from '../sessions/model.js';
import { POD_IDENTITY_REASON, dialState, type DialPolicy } from '../sessions/pod-identity.js';
import type { SessionStore } from '../sessions/store.js';
import type { TraceContext } from '../tracing/tracing-config.js';
import type {
  CallOptions,
  CancelSignal,
  ExecRequest,
  ExecResult,
  ExecTransport,
  FileDownload,
  UploadBody,
  WriteFileResult,
} from '../exec/types.js';
import { assertSessionName } from './namespaces.js';
import { assertSynced, notFoundOrGone, readThrough } from './sessions-service.js';

/** An exec as the API accepts it: the public exec request (crds/src/public/exec.ts). */
export type ExecInput = PublicExecRequest;

/** Dependencies of the exec service. */
export interface ExecServiceDeps {
  store: SessionStore;
  transports: Record<TransportKind, ExecTransport>;
  activity: ActivityReporter;
  limits: ExecLimits;
  maxFileBytes: number;
  /** Which pod IPs may be dialed, and whether their Pod must be tied to the session. */
  dialPolicy: DialPolicy;
  metrics?: GatewayMetrics;
}

/**
 * How long to wait for a session that is not in the cache yet: another replica may have created
 * it a moment ago and this replica's watch has not delivered it.
 */
const NOT_FOUND_GRACE_MS = 1000;
/** Retry-After of a 503 for a session that is still starting. */
const NOT_READY_RETRY_AFTER_SECONDS = 2;

/**
 * The 503 of a session that did not become dialable in time: `pod-identity-unverified` when its
 * status names a Pod the gateway cannot tie to it, else `session-not-ready`.
 */
function notReady(name: string, state: { reason: string; message: string }): ProblemError {
  return new ProblemError(
    state.reason === POD_IDENTITY_REASON ? 'pod-identity-unverified' : 'session-not-ready',
    `session ${name} is not ready: ${state.reason}: ${state.message}`,
    {
      retryAfterSeconds: NOT_READY_RETRY_AFTER_SECONDS,
      extensions: { reason: state.reason },
    },
  );
}

/** The session as the activity reporter sees it, with the request's trace context when traced. */
export function activitySubject(
  target: ExecTarget,
  opts: CallOptions,
): ExecTarget & { trace?: TraceContext } {
  return opts.trace ? { ...target, trace: opts.trace } : target;
}

/** Exec, streaming exec and files. */
export class ExecService {
  constructor(private readonly d: ExecServiceDeps) {}

  /**
   * The Ready session's target, waiting up to waitSeconds (bounded by config) for it. `call.trace`:
   * the request's trace context, for the Kubernetes calls a resume or a read-through makes.
   */
  async resolveTarget(
    namespace: string,
    name: string,
    waitSeconds: number | undefined,
    call: Pick<CallOptions, 'signal' | 'trace'> & {
      /** When this call resumes the session, wait for it at least the default budget. */
      wake?: boolean;
      /** Told when this call resumed the session (a port route then lets its server start). */
      onResume?: () => void;
    } = {},
  ): Promise<ExecTarget> {
    const { signal, trace } = call;
    assertSessionName(name);
    assertSynced(this.d.store);
    const waitMs =
      Math.min(waitSeconds ?? this.d.limits.defaultWaitSeconds, this.d.limits.maxWaitSeconds) * 1000;
    const now = Date.now();
    const limits = { deadline: now + waitMs, graceEnd: now + Math.min(waitMs, NOT_FOUND_GRACE_MS) };
    let resumed = false;
    let readThroughDone = false;
    for (;;) {
      // Resume on the next call (ADR 0015): a suspended session is resumed by this call, once,
      // then waited for like any session that is starting.
      // (Checked synchronously first: the usual session is not suspended, and the exec path then
      // takes no promise hop for it.)
      if (
        !resumed &&
        this.suspendedInCache(namespace, name) &&
        (await this.resumeIfSuspended(namespace, name, call, limits))
      ) {
        resumed = true;
        continue;
      }
      const step = this.check(namespace, name, limits, signal);
      if ('target' in step) return step.target;
      if ('absent' in step) {
        // The grace ran out without the watch delivering it: ask the API server once. A session
        // that exists is waited for like one that is starting (the watch will deliver it).
        if (readThroughDone) {
          throw notReady(name, { reason: 'Pending', message: 'this gateway replica has not seen it yet' });
        }
        if (!(await readThrough(this.d.store, namespace, name, trace))) {
          throw notFoundOrGone(this.d.store, namespace, name);
        }
        readThroughDone = true;
        limits.graceEnd = limits.deadline;
        continue;
      }
      await this.d.store.waitForChange(namespace, name, step.waitMs, signal);
    }
  }

  /** True when the cache shows the session suspended (and not being deleted): a call resumes it. */
  private suspendedInCache(namespace: string, name: string): boolean {
    const cached = this.d.store.get(namespace, name);
    return cached?.spec.suspend === true && !cached.metadata.deletionTimestamp;
  }

  /**
   * Resumes the session when the cache shows it suspended; true when it did. Wake on traffic
   * (issue 27): a port route asks for no wait (a merely starting session answers 503 at once) but
   * `wake`: when it resumes the session, it is answered once the session is Ready, within the
   * default wait budget.
   */
  private async resumeIfSuspended(
    namespace: string,
    name: string,
    call: { trace?: TraceContext; wake?: boolean; onResume?: () => void },
    limits: { deadline: number },
  ): Promise<boolean> {
    if (!this.suspendedInCache(namespace, name)) return false;
    await this.resume(namespace, name, call.trace);
    call.onResume?.();
    if (call.wake) {
      const wakeMs = Math.min(this.d.limits.defaultWaitSeconds, this.d.limits.maxWaitSeconds) * 1000;
      limits.deadline = Math.max(limits.deadline, Date.now() + wakeMs);
    }
    return true;
  }

  /** Resumes a suspended session (one merge patch); 404/410 when it is gone. */
  private async resume(namespace: string, name: string, trace: TraceContext | undefined): Promise<void> {
    if (!(await this.d.store.setSuspended(namespace, name, false, trace))) {
      throw notFoundOrGone(this.d.store, namespace, name);
    }
  }

  /** One look at the cache: the target, or how long to wait for the next change; throws when done waiting. */
  private check(
    namespace: string,
    name: string,
    limits: { deadline: number; graceEnd: number },
    signal: CancelSignal | undefined,
  ): { target: ExecTarget } | { waitMs: number } | { absent: true } {
    const s = this.d.store.get(namespace, name);
    if (!s) {
      // Absent: wait out a short grace for this replica's watch lag, unless it is known deleted.
      const waitMs = limits.graceEnd - Date.now();
      if (signal?.aborted || this.d.store.tombstone(namespace, name)) {
        throw notFoundOrGone(this.d.store, namespace, name);
      }
      return waitMs <= 0 ? { absent: true } : { waitMs };
    }
    const state = dialState(s, this.d.store, this.d.dialPolicy);
    if (state.kind === 'ready') return { target: state.target };
    if (state.kind === 'gone') {
      throw new ProblemError('session-gone', `session ${name} is gone: ${state.reason}`, {
        extensions: { reason: state.reason },
      });
    }
    const waitMs = limits.deadline - Date.now();
    if (waitMs <= 0 || signal?.aborted) throw notReady(name, state);
    return { waitMs };
  }

  /** Runs one command and returns the agent's result shape. */
  async exec(namespace: string, name: string, input: ExecInput, opts: CallOptions = {}): Promise<ExecResult> {
    const req = this.toRequest(input);
    const target = await this.resolveTarget(namespace, name, input.waitSeconds, opts);
    const end = this.d.activity.begin(activitySubject(target, opts));
    // A start time rather than prom-client's startTimer: no closures, label merge or hrtime pair per call.
    const started = this.d.metrics ? performance.now() : 0;
    try {
      const result = await this.transport(target, req).exec(target, req, opts);
      this.observeExec(target.transport, 'ok', started);
      this.countExit(target.transport, result.exitCode, result.timedOut);
      return result;
    } catch (err) {
      this.observeExec(target.transport, 'error', started);
      throw err;
    } finally {
      end();
    }
  }

  /** Starts a streaming exec; the NDJSON stream is returned once the sandbox accepted the command. */
  async execStream(
    namespace: string,
    name: string,
    input: ExecInput,
    opts: CallOptions = {},
  ): Promise<Readable> {
    const req = this.toRequest(input);
    const target = await this.resolveTarget(namespace, name, input.waitSeconds, opts);
    const end = this.d.activity.begin(activitySubject(target, opts));
    try {
      const stream = await this.transport(target, req, opts.stdinLines !== undefined).execStream(
        target,
        req,
        opts,
      );
      stream.once('close', end);
      return stream;
    } catch (err) {
      end();
      throw err;
    }
  }

  /** Stores a file in the session's workspace. */
  async writeFile(
    namespace: string,
    name: string,
    file: { path: string; data: UploadBody },
    opts: CallOptions = {},
  ): Promise<WriteFileResult> {
    const target = await this.resolveTarget(namespace, name, undefined, opts);
    try {
      return await this.transport(target).writeFile(target, file.path, file.data, opts);
    } finally {
      this.d.activity.touch(activitySubject(target, opts));
    }
  }

  /** Opens a file of the session's workspace for download (bounded by the file size limit). */
  async readFile(
    namespace: string,
    name: string,
    path: string,
    opts: CallOptions = {},
  ): Promise<FileDownload> {
    const target = await this.resolveTarget(namespace, name, undefined, opts);
    try {
      return await this.transport(target).readFile(target, path, this.d.maxFileBytes, opts);
    } finally {
      this.d.activity.touch(activitySubject(target, opts));
    }
  }

  private transport(target: ExecTarget, req?: ExecRequest, streamedStdin = false): ExecTransport {
    // pods/exec runs each command without a stdin channel: refusing beats silently dropping it.
    if ((req?.stdin !== undefined || streamedStdin) && target.transport !== 'Agent') {
      throw new ProblemError(
        'not-supported',
        `stdin needs the Agent transport; session ${target.name} uses ${target.transport}`,
      );
    }
    return this.d.transports[target.transport];
  }

  private toRequest(input: ExecInput): ExecRequest {
    const timeoutSeconds = input.timeoutSeconds ?? this.d.limits.defaultTimeoutSeconds;
    if (timeoutSeconds > this.d.limits.maxTimeoutSeconds) {
      throw new ProblemError(
        'invalid-request',
        `timeoutSeconds must be at most ${this.d.limits.maxTimeoutSeconds}`,
      );
    }
    const req: ExecRequest = { command: input.command, timeoutSeconds };
    if (input.cwd !== undefined) req.cwd = input.cwd;
    if (input.env !== undefined) req.env = input.env;
    if (input.stdin !== undefined) req.stdin = input.stdin;
    if (input.stdinEncoding !== undefined) req.stdinEncoding = input.stdinEncoding;
    return req;
  }

  /** Observes an exec's duration in seconds since `started` (performance.now()). */
  private observeExec(transport: TransportKind, outcome: 'ok' | 'error', started: number): void {
    this.d.metrics?.execDuration.observe({ transport, outcome }, (performance.now() - started) / 1000);
  }

  private countExit(transport: TransportKind, exitCode: number, timedOut: boolean): void {
    const exit = timedOut ? 'timeout' : exitCode === 0 ? 'zero' : 'nonzero';
    this.d.metrics?.execExitCodes.inc({ transport, exit });
  }
}
