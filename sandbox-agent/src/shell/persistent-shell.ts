/**
 * The pod's one persistent bash: a FIFO queue of commands run one at a time, each with a deadline
 * that starts when it leaves the queue, an output cap, and a process-group kill on timeout or
 * cancellation that leaves bash alive. When bash dies (killed, `exit`, `exec`), it is restarted at
 * once (so /healthz stays true) and the next command is told its state was reset.
 */
import type { Logger } from '../log.js';
import { errorMessage } from '../log.js';
import { BashProcess, type OutputStream } from './bash-process.js';
import type { ControlRecord } from './control-parser.js';
import { Execution, type OutputObserver } from './execution.js';
import { killCommandProcesses } from './processes.js';
import { settlesWithin } from './timing.js';
import { SHELL_INIT, type ShellCommand } from './wrapper.js';

/** A command with its deadline. */
export interface ExecRequest extends ShellCommand {
  timeoutSeconds: number;
}

/** What the caller gets back (the wire shape minus the output, which went to the observer). */
export interface ExecResult {
  exitCode: number;
  durationMs: number;
  truncated: boolean;
  timedOut: boolean;
  shellReset: boolean;
  /** Which streams lost bytes to the cap (not on the wire; encoders use it). */
  truncatedStreams: Record<OutputStream, boolean>;
}

/** Options of {@link PersistentShell}. */
export interface ShellOptions {
  bashPath: string;
  /** Starting directory of every (re)started bash. */
  workspace: string;
  /** bash's environment; the composition root strips the agent's secrets from it. */
  env: NodeJS.ProcessEnv;
  outputCapBytes: number;
  logger: Logger;
  /** How long a stopped command gets to end (its processes are swept meanwhile) before bash is restarted. */
  killGraceMs?: number;
  /** How long a (re)started bash gets to answer its first framed no-op. */
  startTimeoutMs?: number;
}

/** bash cannot be started, or the agent is shutting down (HTTP 503). */
export class ShellUnavailableError extends Error {
  override readonly name = 'ShellUnavailableError';
}

/** The caller went away before its command started; it was not run. */
export class ExecCancelledError extends Error {
  override readonly name = 'ExecCancelledError';
}

/** Pause between kill sweeps while a stopped command has not ended yet. */
const SWEEP_INTERVAL_MS = 100;

/** A shell that died within this time of its start is restarted after a pause (no crash loop). */
const QUICK_DEATH_MS = 1000;

interface Running {
  exec: Execution;
  bash: BashProcess;
  stopping: boolean;
}

/** See the module comment. */
export class PersistentShell {
  private bash: BashProcess | undefined;
  private starting: Promise<BashProcess> | undefined;
  private current: Running | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  /**
   * The kill sweep of the last stopped command. The next command starts only once it is over: a
   * sweep picks its targets by start time, and a process the next command started would qualify.
   */
  private sweep: Promise<void> = Promise.resolve();
  private waiting = 0;
  private closing = false;
  private resetPending = false;
  private respawnTimer: NodeJS.Timeout | undefined;
  private readonly killGraceMs: number;
  private readonly startTimeoutMs: number;

  constructor(private readonly opts: ShellOptions) {
    this.killGraceMs = opts.killGraceMs ?? 2000;
    this.startTimeoutMs = opts.startTimeoutMs ?? 10_000;
  }

  /** Starts bash; rejects when it cannot be started. */
  async start(): Promise<void> {
    await this.ensureBash();
  }

  /** True when bash is up and answering, and the agent is not shutting down. */
  get alive(): boolean {
    return !this.closing && this.bash?.alive === true;
  }

  /** Commands waiting behind the running one. */
  get queueLength(): number {
    return this.waiting;
  }

  /**
   * Queues a command; output goes to `observer` as it arrives. Aborting `signal` cancels it: a
   * queued command is dropped, a running one has its processes killed (bash survives).
   */
  run(request: ExecRequest, observer: OutputObserver, signal?: AbortSignal): Promise<ExecResult> {
    this.waiting++;
    const job = this.queue.then(() => {
      this.waiting--;
      return this.execute(request, observer, signal);
    });
    this.queue = job.catch(() => undefined).then(() => this.sweep.catch(() => undefined));
    return job;
  }

  /**
   * Stops: refuses new and queued commands, lets the running one finish for up to `graceMs`,
   * then kills it, then terminates bash and everything left in its session.
   */
  async close(graceMs: number): Promise<void> {
    this.closing = true;
    clearTimeout(this.respawnTimer);
    const running = this.current;
    if (running && !(await settlesWithin(running.exec.done, graceMs))) {
      this.opts.logger.warn('shutdown grace over, killing the running command', { graceMs });
      await this.stopCommand(running, 'shutdown');
    }
    await this.starting?.catch(() => undefined);
    const bash = this.bash;
    this.bash = undefined;
    if (!bash) return;
    bash.signalGroup('SIGTERM');
    if (!(await settlesWithin(bash.gone, this.killGraceMs))) await bash.killAll();
    await bash.gone;
  }

  private async execute(
    request: ExecRequest,
    observer: OutputObserver,
    signal?: AbortSignal,
  ): Promise<ExecResult> {
    if (this.closing) throw new ShellUnavailableError('the agent is shutting down');
    if (signal?.aborted) throw new ExecCancelledError('the caller went away before the command started');
    const bash = await this.ensureBash().catch((err: unknown) => {
      throw new ShellUnavailableError('bash is not available', { cause: err });
    });
    const shellReset = this.resetPending;
    this.resetPending = false;
    const running: Running = {
      exec: new Execution(request, this.opts.outputCapBytes, observer),
      bash,
      stopping: false,
    };
    this.current = running;
    observer.onStart?.();
    bash.write(running.exec.script);
    const unwatch = this.watch(running, request.timeoutSeconds * 1000, signal);
    try {
      const outcome = await running.exec.done;
      const { exitCode, durationMs, truncated, timedOut, truncatedStreams } = outcome;
      this.opts.logger.debug('command finished', { exitCode, durationMs, truncated, timedOut, shellReset });
      return { exitCode, durationMs, truncated, timedOut, shellReset, truncatedStreams };
    } finally {
      unwatch();
      this.current = undefined;
    }
  }

  /** Arms the deadline and the cancellation; returns the disarm function. */
  private watch(running: Running, deadlineMs: number, signal?: AbortSignal): () => void {
    const timer = setTimeout(() => {
      running.exec.markTimedOut();
      void this.stopCommand(running, 'timeout');
    }, deadlineMs);
    const onAbort = (): void => void this.stopCommand(running, 'cancelled');
    signal?.addEventListener('abort', onAbort, { once: true });
    return () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    };
  }

  /**
   * Kills the command's processes, again and again for up to killGraceMs (a shell loop may start
   * new ones, or a process may be forked just after a sweep); restarts bash if the command still
   * does not end (a builtin loop runs inside bash itself).
   */
  private stopCommand(running: Running, reason: string): Promise<void> {
    if (running.stopping || running.exec.finished) return this.sweep;
    running.stopping = true;
    this.sweep = this.sweepUntilStopped(running, reason);
    return this.sweep;
  }

  private async sweepUntilStopped(running: Running, reason: string): Promise<void> {
    const { logger } = this.opts;
    const giveUpAt = Date.now() + this.killGraceMs;
    let signals = 0;
    try {
      do {
        signals += await killCommandProcesses(
          running.bash.pid,
          running.exec.elapsedMs,
          running.exec.startPid,
        );
        if (await settlesWithin(running.exec.done, SWEEP_INTERVAL_MS)) {
          logger.info('command stopped', { reason, signals });
          return;
        }
      } while (Date.now() < giveUpAt);
      logger.warn('command did not stop, restarting the shell', { reason, signals });
      await running.bash.killAll();
    } catch (err) {
      logger.error('cannot stop the command, restarting the shell', { reason, error: errorMessage(err) });
      await running.bash.killAll().catch((killErr: unknown) => {
        logger.error('cannot kill the shell', { error: errorMessage(killErr) });
      });
    }
  }

  private ensureBash(): Promise<BashProcess> {
    if (this.bash?.alive) return Promise.resolve(this.bash);
    this.starting ??= this.spawn().finally(() => (this.starting = undefined));
    return this.starting;
  }

  /** Starts bash, runs the init script and a framed no-op to prove the framing works. */
  private async spawn(): Promise<BashProcess> {
    const { opts } = this;
    const bash = await BashProcess.start(
      { bashPath: opts.bashPath, cwd: opts.workspace, env: opts.env, logger: opts.logger },
      (self) => ({
        output: (stream, chunk) => this.onOutput(self, stream, chunk),
        control: (record) => this.onControl(self, record),
        exit: (code, signal) => this.onExit(self, code, signal),
      }),
    );
    const probe: Running = {
      exec: new Execution({ command: ':' }, 1, { onOutput: () => {} }),
      bash,
      stopping: false,
    };
    this.current = probe;
    bash.write(SHELL_INIT + probe.exec.script);
    const answered = await settlesWithin(probe.exec.done, this.startTimeoutMs);
    this.current = undefined;
    if (!answered || !bash.alive) {
      await bash.killAll();
      throw new Error(answered ? 'bash exited during its start' : 'bash did not answer its first command');
    }
    this.bash = bash;
    opts.logger.info('shell started', { pid: bash.pid });
    return bash;
  }

  private onOutput(bash: BashProcess, stream: OutputStream, chunk: Buffer): void {
    const running = this.current;
    const stray = running?.bash === bash ? running.exec.onOutput(stream, chunk) : chunk.length;
    // Output of background jobs between commands belongs to no call; count it, never log it.
    if (stray > 0) this.opts.logger.debug('dropped output outside any command', { stream, bytes: stray });
  }

  private onControl(bash: BashProcess, record: ControlRecord): void {
    const running = this.current;
    if (running?.bash !== bash || !running.exec.onControl(record)) {
      this.opts.logger.warn('ignored a control record of no running command');
    }
  }

  private onExit(bash: BashProcess, code: number | null, signal: NodeJS.Signals | null): void {
    const running = this.current;
    if (running?.bash === bash) running.exec.onShellExit(code, signal);
    if (this.bash === bash) this.bash = undefined;
    if (this.closing) return;
    this.resetPending = true;
    const delay = Date.now() - bash.spawnedAt < QUICK_DEATH_MS ? QUICK_DEATH_MS : 0;
    this.opts.logger.warn('shell exited, restarting it', {
      pid: bash.pid,
      code: code ?? undefined,
      signal: signal ?? undefined,
    });
    clearTimeout(this.respawnTimer);
    this.respawnTimer = setTimeout(() => {
      this.ensureBash().catch((err: unknown) => {
        this.opts.logger.error('cannot restart the shell', { error: errorMessage(err) });
      });
    }, delay);
  }
}
