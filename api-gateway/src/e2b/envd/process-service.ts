/**
 * envd's Process service over the sandbox agent's background processes (launcher.ts says how a
 * process is started and reached; docs/e2b.md maps every call). Every process, a one-line command
 * as much as a server or a terminal, is an agent background process: the SDKs do not tell a
 * foreground command from a background one, and the agent's persistent shell runs one command at a
 * time. State lives in the agent, so any gateway replica serves any call.
 *
 * A stream (Start, Connect) follows the process's output from the agent and ends with its exit;
 * the exited process is then removed from the agent (a sandbox holds 16), and processes whose
 * streams went away are removed when a start finds the sandbox full.
 */
import type { Readable } from 'node:stream';

import type { ExitEvent, ProcessInfo as AgentProcess } from '@sandbox-platform/api';
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import type { FastifyBaseLogger } from 'fastify';

import { ProblemError, isProblemError } from '../../errors.js';
import type { CallOptions, ExecResult } from '../../exec/types.js';
import type { ExecService } from '../../service/exec-service.js';
import type { StartedFollow } from '../../exec/agent/agent-processes.js';
import type { ProcessService, SessionRef } from '../../service/process-service.js';
import {
  Signal,
  type ConnectRequest,
  type Process,
  type ProcessInput,
  type SendInputRequest,
  type StartRequest,
  type StreamInputRequest,
  type UpdateRequest,
} from '../gen/process/process_pb.js';
import { guarded, guardedStream } from './errors.js';
import {
  checkEnvs,
  cleanupScript,
  EXIT_NOT_READY,
  closeStdinScript,
  inputScript,
  launcherScript,
  parseMarker,
  resizeScript,
  type Marker,
} from './launcher.js';
import {
  dataEvent,
  endEvent,
  outputBytes,
  followLines,
  keepaliveEvent,
  listedProcess,
  startEvent,
  TICK,
  withKeepalive,
  type ProcessEventInit,
} from './process-events.js';
import {
  callOptions,
  findProcess,
  findRunning,
  runScript,
  sessionOf,
  stderrLine,
  type Selector,
} from './sandbox-calls.js';

/**
 * One follow's lines as events (keepalives while quiet), advancing `offsets`; returns the exit
 * when the follow ended with it, undefined when it ended before (its deadline).
 */
async function* relay(
  stream: Readable,
  offsets: { stdout: number; stderr: number },
  pty: boolean,
  tickMs: number,
): AsyncGenerator<ProcessEventInit, ExitEvent | undefined> {
  try {
    for await (const item of withKeepalive(followLines(stream), tickMs)) {
      if (item !== TICK && item.type === 'exit') return item;
      if (item !== TICK) offsets[item.type] = item.offset + outputBytes(item);
      const event = item === TICK ? keepaliveEvent() : dataEvent(item, pty);
      if (event) yield event;
    }
    return undefined;
  } finally {
    stream.destroy();
  }
}

/** What following and removing a process needs of it. */
type Followed = Pick<AgentProcess, 'id' | 'command'>;

/** Longest a SIGKILL's answer waits for the process to be gone. */
const KILL_WAIT_SECONDS = 2;

/** What the service needs. */
export interface ProcessServiceDeps {
  processes: ProcessService;
  execs: ExecService;
  log: FastifyBaseLogger;
  /** Length of one follow of the agent (followed again until the exit). Default 240 s. */
  followMs?: number;
  /** The agent's PTY helper in the sandbox (default launcher.ts PTY_HELPER; tests compile their own). */
  ptyHelper?: string;
  /** Where the sandbox keeps its login environment (default launcher.ts LOGIN_ENV_FILE; tests use their own). */
  loginEnvFile?: string;
}

/** Seconds a write to a process's input may take (a process that does not read blocks it). */
const INPUT_TIMEOUT_SECONDS = 10;
const DEFAULT_FOLLOW_MS = 240_000;

/** The keepalive interval a client asked for (`Keepalive-Ping-Interval`, seconds), or 0. */
export function keepaliveMs(ctx: HandlerContext): number {
  const s = Number(ctx.requestHeader.get('keepalive-ping-interval'));
  return Number.isInteger(s) && s >= 1 && s <= 3600 ? s * 1000 : 0;
}

function toSpec(req: StartRequest): Parameters<typeof launcherScript>[0] {
  const p = req.process;
  if (!p) throw new ProblemError('invalid-request', 'process is required');
  const size = req.pty?.size;
  return {
    cmd: p.cmd,
    args: p.args,
    env: p.envs,
    ...(p.cwd !== undefined ? { cwd: p.cwd } : {}),
    ...(req.tag !== undefined ? { tag: req.tag } : {}),
    ...(req.pty ? { pty: { cols: size?.cols ?? 80, rows: size?.rows ?? 24 } } : {}),
    // Absent means true: older SDKs always had a stdin.
    stdin: req.stdin ?? true,
  };
}

/** envd's Process service. */
export class EnvdProcesses {
  private readonly followMs: number;

  constructor(private readonly d: ProcessServiceDeps) {
    this.followMs = d.followMs ?? DEFAULT_FOLLOW_MS;
  }

  /** The Connect implementation (errors become Connect errors with the SDKs' codes). */
  impl(): Partial<ServiceImpl<typeof Process>> {
    return {
      list: (_req, ctx) => guarded(() => this.list(ctx)),
      start: (req, ctx) => guardedStream(() => this.start(req, ctx)),
      connect: (req, ctx) => guardedStream(() => this.connect(req, ctx)),
      sendSignal: (req, ctx) => guarded(() => this.signal(req.process?.selector, req.signal, ctx)),
      sendInput: (req, ctx) => guarded(() => this.sendInput(req, ctx)),
      streamInput: (reqs, ctx) => guarded(() => this.streamInput(reqs, ctx)),
      closeStdin: (req, ctx) => guarded(() => this.closeStdin(req.process?.selector, ctx)),
      update: (req, ctx) => guarded(() => this.update(req, ctx)),
    };
  }

  private async list(ctx: HandlerContext): Promise<{ processes: ReturnType<typeof listedProcess>[] }> {
    const { processes } = await this.d.processes.list(sessionOf(ctx), callOptions(ctx));
    const shown = processes.filter((p) => p.state === 'running' && parseMarker(p.command)?.watch !== true);
    return { processes: shown.map(listedProcess) };
  }

  private async *start(req: StartRequest, ctx: HandlerContext): AsyncGenerator<{ event: ProcessEventInit }> {
    const ref = sessionOf(ctx);
    const spec = toSpec(req);
    const envs = spec.env ?? {};
    checkEnvs(envs);
    const opts = callOptions(ctx);
    const command = launcherScript(spec, undefined, this.d.ptyHelper, this.d.loginEnvFile);
    // One agent call starts the process and follows it: the start, output and exit of a command
    // in one round trip (an older agent answers a plain start: follow() then follows it).
    const started = await this.startFollowing(
      ref,
      {
        command,
        ...(Object.keys(envs).length ? { env: envs } : {}),
        ...(spec.cwd !== undefined ? { cwd: spec.cwd } : {}),
      },
      opts,
    );
    try {
      yield { event: startEvent(started.pid) };
      const proc = { id: started.id, command };
      const from = { stdout: 0, stderr: 0 };
      for await (const event of this.follow(ref, proc, ctx, {
        from,
        ...(started.stream ? { stream: started.stream } : {}),
      }))
        yield { event };
    } finally {
      started.stream?.destroy();
    }
  }

  private async *connect(
    req: ConnectRequest,
    ctx: HandlerContext,
  ): AsyncGenerator<{ event: ProcessEventInit }> {
    const ref = sessionOf(ctx);
    const proc = await findRunning(this.d.processes, ref, req.process?.selector, callOptions(ctx));
    yield { event: startEvent(proc.pid) };
    const from = { stdout: proc.stdout.size, stderr: proc.stderr.size };
    for await (const event of this.follow(ref, proc, ctx, { from })) yield { event };
  }

  /**
   * Starts and follows a process; when the sandbox is full, removes finished E2B processes and
   * tries once more.
   */
  private async startFollowing(
    ref: SessionRef,
    req: { command: string; cwd?: string; env?: Record<string, string> },
    opts: CallOptions,
  ): Promise<StartedFollow> {
    const query = (): { deadlineAt: number } => ({ deadlineAt: Date.now() + this.followMs });
    try {
      return await this.d.processes.startFollow(ref, req, query(), opts);
    } catch (err) {
      if (!isProblemError(err) || err.slug !== 'too-many-processes') throw err;
      if ((await this.reap(ref, opts)) === 0) throw err;
      return this.d.processes.startFollow(ref, req, query(), opts);
    }
  }

  private async reap(ref: SessionRef, opts: CallOptions): Promise<number> {
    const { processes } = await this.d.processes.list(ref, opts);
    const done = processes.filter((p) => p.state === 'exited' && parseMarker(p.command) !== undefined);
    await Promise.all(done.map((p) => this.discard(ref, p)));
    return done.length;
  }

  /** Follows the output from the offsets to the exit (following again after each follow's deadline). */
  private async *follow(
    ref: SessionRef,
    proc: Followed,
    ctx: HandlerContext,
    start: { from: { stdout: number; stderr: number }; stream?: Readable },
  ): AsyncGenerator<ProcessEventInit> {
    const offsets = { ...start.from };
    const pty = parseMarker(proc.command)?.pty === true;
    const tickMs = keepaliveMs(ctx);
    // The stream of the start that followed its process, when it did: the first follow.
    let already = start.stream;
    for (;;) {
      const stream =
        already ??
        (await this.d.processes.follow(
          ref,
          proc.id,
          {
            stdoutOffset: offsets.stdout,
            stderrOffset: offsets.stderr,
            deadlineAt: Date.now() + this.followMs,
          },
          callOptions(ctx),
        ));
      already = undefined;
      const exit = yield* relay(stream, offsets, pty, tickMs);
      if (exit) {
        yield endEvent(exit);
        void this.discard(ref, proc);
        return;
      }
      if (ctx.signal.aborted) return;
    }
  }

  /** Removes an exited process and its FIFO directory; failures are logged, never thrown. */
  private async discard(ref: SessionRef, proc: Followed): Promise<void> {
    try {
      await this.d.processes.remove(ref, proc.id);
      const io = parseMarker(proc.command)?.io;
      if (io) await runScript(this.d.execs, ref, { script: cleanupScript(io), timeoutSeconds: 10 }, {});
    } catch (err) {
      if (isProblemError(err) && err.slug === 'process-not-found') return;
      this.d.log.debug(
        { namespace: ref.namespace, session: ref.name, process: proc.id, err: (err as Error).message },
        'e2b: could not remove a finished process',
      );
    }
  }

  private async signal(selector: Selector | undefined, signal: Signal, ctx: HandlerContext): Promise<object> {
    const name = signal === Signal.SIGKILL ? 'SIGKILL' : signal === Signal.SIGTERM ? 'SIGTERM' : undefined;
    if (!name) throw new ProblemError('invalid-request', 'signal must be SIGTERM or SIGKILL');
    const ref = sessionOf(ctx);
    const opts = callOptions(ctx);
    const proc = await findRunning(this.d.processes, ref, selector, opts);
    await this.d.processes.signal(ref, proc.id, name, opts);
    // A kill answers once the process is gone (at most KILL_WAIT_SECONDS): the SDKs' kill() then
    // list() must not show it (the Python SDK's check did, once, on a fresh clone). SIGTERM may be
    // handled or ignored: it answers once sent, as envd does.
    // The process's own Start or Connect stream may see the exit first and remove the process
    // (discard): a wait that then finds no process finds it gone, which is what it waits for
    // (answering NotFound made the SDK's kill() return false: a fresh-clone CI of 2026-12-07).
    if (name === 'SIGKILL') {
      await this.d.processes.wait(ref, proc.id, KILL_WAIT_SECONDS, opts).catch((err: unknown) => {
        if (!isProblemError(err) || err.slug !== 'process-not-found') throw err;
      });
    }
    return {};
  }

  private async sendInput(req: SendInputRequest, ctx: HandlerContext): Promise<object> {
    const ref = sessionOf(ctx);
    const opts = callOptions(ctx);
    const proc = await findRunning(this.d.processes, ref, req.process?.selector, opts);
    await this.write(ref, parseMarker(proc.command), req.input, opts);
    return {};
  }

  private async streamInput(reqs: AsyncIterable<StreamInputRequest>, ctx: HandlerContext): Promise<object> {
    const ref = sessionOf(ctx);
    const opts = callOptions(ctx);
    let marker: Marker | undefined;
    for await (const req of reqs) {
      if (req.event.case === 'start') {
        marker = parseMarker(
          (await findRunning(this.d.processes, ref, req.event.value.process?.selector, opts)).command,
        );
      } else if (req.event.case === 'data') {
        if (!marker)
          throw new ProblemError('invalid-request', 'the first input message must name the process');
        await this.write(ref, marker, req.event.value.input, opts);
      }
    }
    return {};
  }

  /** Writes input into the process's FIFO (stdin, or the terminal's input). */
  private async write(
    ref: SessionRef,
    marker: Marker | undefined,
    input: ProcessInput | undefined,
    opts: CallOptions,
  ): Promise<void> {
    const data = input?.input.value;
    if (!data || typeof data === 'string') throw new ProblemError('invalid-request', 'input is required');
    const wantsPty = input.input.case === 'pty';
    const io = marker?.io;
    if (!io || (wantsPty ? marker.pty !== true : marker.stdin !== true)) {
      throw new ProblemError(
        'invalid-request',
        wantsPty
          ? 'the process has no terminal'
          : 'the process was started without stdin (start it with stdin: true)',
      );
    }
    if (data.length === 0) return;
    const r = await runScript(
      this.d.execs,
      ref,
      { script: inputScript(io), stdin: Buffer.from(data), timeoutSeconds: INPUT_TIMEOUT_SECONDS },
      opts,
    );
    if (r.exitCode !== 0)
      throw new ProblemError('process-not-found', `cannot write to the process: ${failure(r)}`);
  }

  private async closeStdin(selector: Selector | undefined, ctx: HandlerContext): Promise<object> {
    const ref = sessionOf(ctx);
    const opts = callOptions(ctx);
    const marker = parseMarker((await findRunning(this.d.processes, ref, selector, opts)).command);
    if (!marker?.io || marker.stdin !== true) {
      throw new ProblemError(
        'invalid-request',
        'the process has no stdin to close (a terminal takes Ctrl-D as input)',
      );
    }
    const r = await runScript(
      this.d.execs,
      ref,
      { script: closeStdinScript(marker.io), timeoutSeconds: 10 },
      opts,
    );
    if (r.exitCode !== 0) throw new ProblemError('process-not-found', `cannot close stdin: ${failure(r)}`);
    return {};
  }

  private async update(req: UpdateRequest, ctx: HandlerContext): Promise<object> {
    const ref = sessionOf(ctx);
    const opts = callOptions(ctx);
    const size = req.pty?.size;
    if (!size) return {};
    const marker = parseMarker(
      (await findProcess(this.d.processes, ref, req.process?.selector, opts)).command,
    );
    if (!marker?.io || marker.pty !== true)
      throw new ProblemError('invalid-request', 'the process has no terminal');
    const r = await runScript(
      this.d.execs,
      ref,
      { script: resizeScript(marker.io, size.cols, size.rows) },
      opts,
    );
    if (r.exitCode !== 0)
      throw new ProblemError('process-not-found', `cannot resize the terminal: ${failure(r)}`);
    return {};
  }
}

/** Why an input, close or resize script failed. */
function failure(r: ExecResult): string {
  return r.exitCode === EXIT_NOT_READY
    ? 'the process has not made its input channel (it may have exited)'
    : stderrLine(r);
}
