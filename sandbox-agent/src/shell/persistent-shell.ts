/**
 * The pod's one persistent bash: a FIFO queue of commands run one at a time, each with a deadline
 * that starts when it leaves the queue, an output cap, and a process-group kill on timeout or
 * cancellation that leaves bash alive. When bash dies (killed, `exit`, `exec`), it is restarted at
 * once (so /healthz stays true) and the next command is told its state was reset; a restart that
 * fails is retried until one succeeds. A bash whose framing breaks (a sentinel on stdout without
 * the exit status after it: something redefined the wrapper's functions or forged its output) is
 * killed and restarted the same way. The queue is bounded, and its progress is observable (stalledMs) for the liveness check.
 */
import { performance } from 'node:perf_hooks';

import { SESSION_ENV_PREFIX } from '@sandbox-platform/api';

import { StdinClosedError, StdinError, type StdinFeed } from '../exec/stdin.js';
import type { Logger } from '../log.js';
import { errorMessage } from '../log.js';
import { BashProcess, type OutputStream } from './bash-process.js';
import { Execution, type OutputObserver } from './execution.js';
import { killCommandProcesses } from './processes.js';
import type { StdinPipe, StdinPipes } from './stdin-pipe.js';
import { FramingError } from './status-trailer.js';
import { settlesWithin } from './timing.js';
import { frame, sessionEnvInit, SHELL_INIT, type ShellCommand } from './wrapper.js';

/** A command with its deadline, and its stdin when it has one. */
export interface ExecRequest extends Omit<ShellCommand, 'stdinPath'> {
  timeoutSeconds: number;
  /** Bytes for the command's stdin (default /dev/null); fed through a FIFO while it runs. */
  stdin?: StdinFeed;
}

/** What the caller gets back (the wire shape minus the output, which went to the observer). */
export interface ExecResult {
  exitCode: number;
  durationMs: number;
  truncated: boolean;
  timedOut: boolean;
  shellReset: boolean;
  /** Set when the stdin feed carried invalid input; the command was stopped (see StdinError). */
  stdinError?: string;
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
  /**
   * The session's env (spec.env): exported in every (re)started bash after its start, never in
   * the agent's own environment (see sessionEnvInit). Names must match ENV_NAME.
   */
  sessionEnv?: Readonly<Record<string, string>>;
  outputCapBytes: number;
  logger: Logger;
  /** How long a stopped command gets to end (its processes are swept meanwhile) before bash is restarted. */
  killGraceMs?: number;
  /** How long a (re)started bash gets to answer its first framed no-op. */
  startTimeoutMs?: number;
  /** Most commands waiting behind the running one; more are refused (503). Default 64. */
  maxQueuedCommands?: number;
  /** Pause between attempts to restart a bash that could not be started. Default 2 s. */
  respawnRetryMs?: number;
  /** Clock of the progress tracking (ms); injected by tests. Default performance.now. */
  now?: () => number;
  /** Where the stdin pipes of commands are made; required for commands with stdin. */
  stdinPipes?: StdinPipes;
}

/** bash cannot be started, or the agent is shutting down (HTTP 503). */
export class ShellUnavailableError extends Error {
  override readonly name: string = 'ShellUnavailableError';
}

/** The caller went away before its command started; it was not run. */
export class ExecCancelledError extends Error {
  override readonly name = 'ExecCancelledError';
}

/** Too many commands are waiting already (HTTP 503, retry later). */
export class QueueFullError extends ShellUnavailableError {
  override readonly name = 'QueueFullError';
}

/**
 * Most commands waiting in the queue by default. Each holds its request (up to the exec body
 * limit, 1 MiB) until it runs, and the queue has no other bound: a caller holding the token (the
 * sandbox's own processes can read it) could otherwise make the agent hold any number.
 */
export const DEFAULT_MAX_QUEUED_COMMANDS = 64;

/** Pause between kill sweeps while a stopped command has not ended yet. */
const SWEEP_INTERVAL_MS = 100;

/** A shell that died within this time of its start is restarted after a pause (no crash loop). */
const QUICK_DEATH_MS = 1000;

/** Margin of {@link PersistentShell.recoveryBudgetMs} for /proc sweeps and pipe drains. */
const RECOVERY_SLACK_MS = 30_000;

interface Running {
  exec: Execution;
  bash: BashProcess;
  stopping: boolean;
  /** The command's log lines go here: the request's logger (with its trace ids) or the shell's. */
  logger: Logger;
  /** What was wrong with the stdin feed, when it stopped the command. */
  stdinError?: string;
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
  /** Shells whose framing broke (being killed). */
  private readonly breached = new WeakSet<BashProcess>();
  private readonly killGraceMs: number;
  private readonly startTimeoutMs: number;
  private readonly maxQueued: number;
  private readonly respawnRetryMs: number;
  private readonly now: () => number;
  /** When the queue last moved: a command left it or ended, or a bash start was settled. */
  private lastProgressAt: number;

  constructor(private readonly opts: ShellOptions) {
    this.killGraceMs = opts.killGraceMs ?? 2000;
    this.startTimeoutMs = opts.startTimeoutMs ?? 10_000;
    this.maxQueued = opts.maxQueuedCommands ?? DEFAULT_MAX_QUEUED_COMMANDS;
    this.respawnRetryMs = opts.respawnRetryMs ?? 2000;
    this.now = opts.now ?? (() => performance.now());
    this.lastProgressAt = this.now();
  }

  /**
   * The longest a healthy shell can go without progress beyond the command's own deadline: the
   * kill sweeps (killGraceMs), the session kill and pipe drain of a bash that would not stop, and
   * the start of the next bash (startTimeoutMs, after the quick-death pause).
   */
  get recoveryBudgetMs(): number {
    return this.killGraceMs + this.startTimeoutMs + QUICK_DEATH_MS + RECOVERY_SLACK_MS;
  }

  /**
   * How long the queue has had work (a running or waiting command, a bash starting) without
   * moving; 0 when idle. The liveness check compares it with the longest allowed command plus
   * {@link recoveryBudgetMs}: beyond that the queue is wedged, and only a restart helps.
   */
  stalledMs(): number {
    const busy = this.current !== undefined || this.waiting > 0 || this.starting !== undefined;
    return busy ? Math.max(0, this.now() - this.lastProgressAt) : 0;
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
  run(
    request: ExecRequest,
    observer: OutputObserver,
    signal?: AbortSignal,
    logger?: Logger,
  ): Promise<ExecResult> {
    if (this.waiting >= this.maxQueued) {
      return Promise.reject(
        new QueueFullError(`the command queue is full (${this.waiting} commands waiting)`),
      );
    }
    // An idle queue gets work: its progress clock starts now, not at the last command of hours ago.
    if (this.stalledMs() === 0) this.markProgress();
    this.waiting++;
    const job = this.queue.then(() => {
      this.waiting--;
      return this.execute(request, observer, signal, logger ?? this.opts.logger);
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
    signal: AbortSignal | undefined,
    logger: Logger,
  ): Promise<ExecResult> {
    if (this.closing) throw new ShellUnavailableError('the agent is shutting down');
    if (signal?.aborted) throw new ExecCancelledError('the caller went away before the command started');
    this.markProgress();
    const bash = await this.ensureBash().catch((err: unknown) => {
      this.scheduleRespawn(this.respawnRetryMs);
      throw new ShellUnavailableError('bash is not available', { cause: err });
    });
    const pipe = request.stdin ? await this.stdinPipe(bash.pid) : undefined;
    const shellReset = this.resetPending;
    this.resetPending = false;
    const running: Running = {
      exec: new Execution({ ...request, stdinPath: pipe?.path }, this.opts.outputCapBytes, observer),
      bash,
      stopping: false,
      logger,
    };
    this.current = running;
    observer.onStart?.();
    bash.write(running.exec.script);
    const unwatch = this.watch(running, request.timeoutSeconds * 1000, signal);
    if (pipe && request.stdin) this.feed(running, pipe, request.stdin);
    try {
      const outcome = await running.exec.done;
      const { exitCode, durationMs, truncated, timedOut, truncatedStreams } = outcome;
      logger.debug('command finished', { exitCode, durationMs, truncated, timedOut, shellReset });
      const result: ExecResult = { exitCode, durationMs, truncated, timedOut, shellReset, truncatedStreams };
      if (running.stdinError !== undefined) result.stdinError = running.stdinError;
      return result;
    } finally {
      unwatch();
      this.current = undefined;
      this.markProgress();
      await pipe?.close().catch((err: unknown) => {
        logger.warn('cannot remove a stdin pipe', { error: errorMessage(err) });
      });
    }
  }

  private stdinPipe(readerPid: number): Promise<StdinPipe> {
    if (!this.opts.stdinPipes) return Promise.reject(new Error('no stdin pipes configured'));
    return this.opts.stdinPipes.create(readerPid);
  }

  /**
   * Pumps the stdin feed into the command's pipe, then closes it (EOF). A feed that carries bad
   * input stops the command as a cancellation would: a half-fed `patch` must not go on.
   */
  private feed(running: Running, pipe: StdinPipe, stdin: StdinFeed): void {
    stdin.pump(pipe.write).then(
      () => pipe.end(),
      (err: unknown) => {
        if (err instanceof StdinClosedError) return;
        pipe.end();
        if (err instanceof StdinError) {
          running.stdinError = err.message;
          running.exec.markStopped();
          void this.stopCommand(running, 'stdin');
          return;
        }
        // The request body broke off (the client went away): the cancellation stops the command.
        running.logger.debug('stdin feed ended early', { error: errorMessage(err) });
      },
    );
  }

  private markProgress(): void {
    this.lastProgressAt = this.now();
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
    const { logger } = running;
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
    this.starting ??= this.spawn().finally(() => {
      this.starting = undefined;
      this.markProgress();
    });
    return this.starting;
  }

  /**
   * Restarts bash after `delayMs`, and again every respawnRetryMs until a start succeeds. Without
   * the retry, a restart that failed (e.g. no PID left while a fork bomb ran) left /healthz at 503
   * for good: the pod went unready, so no command came to try again.
   */
  private scheduleRespawn(delayMs: number): void {
    if (this.closing) return;
    clearTimeout(this.respawnTimer);
    this.respawnTimer = setTimeout(() => {
      this.respawnTimer = undefined;
      this.ensureBash().catch((err: unknown) => {
        this.opts.logger.error('cannot restart the shell', { error: errorMessage(err) });
        this.scheduleRespawn(this.respawnRetryMs);
      });
    }, delayMs);
  }

  /** Starts bash, runs the init script and a framed no-op to prove the framing works. */
  private async spawn(): Promise<BashProcess> {
    const { opts } = this;
    const sessionEnv = opts.sessionEnv ?? {};
    const bash = await BashProcess.start(
      {
        bashPath: opts.bashPath,
        init: SHELL_INIT,
        cwd: opts.workspace,
        env: withCarriers(opts.env, sessionEnv),
        logger: opts.logger,
      },
      (self) => ({
        output: (stream, chunk) => this.onOutput(self, stream, chunk),
        exit: (code, signal) => this.onExit(self, code, signal),
      }),
    );
    const probe: Running = {
      exec: new Execution({ command: ':' }, 1, { onOutput: () => {} }),
      bash,
      stopping: false,
      logger: opts.logger,
    };
    this.current = probe;
    const envInit = sessionEnvInit(Object.keys(sessionEnv));
    bash.write((envInit === '' ? '' : frame(envInit)) + probe.exec.script);
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
    let stray = chunk.length;
    if (running?.bash === bash && !this.breached.has(bash)) {
      try {
        stray = running.exec.onOutput(stream, chunk, () => bash.drainStderr());
      } catch (err) {
        if (!(err instanceof FramingError)) throw err;
        this.onFramingBreach(bash, err.message);
      }
    }
    // Output of background jobs between commands belongs to no call; count it, never log it.
    if (stray > 0) this.opts.logger.debug('dropped output outside any command', { stream, bytes: stray });
  }

  /**
   * The sentinel on stdout came without the exit status the wrapper writes after it: the
   * framing of this bash can no longer be trusted, so it is killed (the running command ends as
   * killed, 137) and restarted; the next command gets shellReset. Handled once per bash: its
   * output is dropped from then on, so a flood costs one log line and one kill.
   */
  private onFramingBreach(bash: BashProcess, reason: FramingError['message']): void {
    if (!bash.alive || this.breached.has(bash)) return;
    this.breached.add(bash);
    this.opts.logger.warn('shell framing breach, restarting the shell', { pid: bash.pid, reason });
    bash.killAll().catch((err: unknown) => {
      this.opts.logger.error('cannot kill the shell', { error: errorMessage(err) });
    });
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
    this.scheduleRespawn(delay);
  }
}

/** bash's start environment: `env` plus each session variable under its carrier name (see sessionEnvInit). */
export function withCarriers(
  env: NodeJS.ProcessEnv,
  sessionEnv: Readonly<Record<string, string>>,
): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = { ...env };
  for (const [name, value] of Object.entries(sessionEnv)) out[SESSION_ENV_PREFIX + name] = value;
  return out;
}
