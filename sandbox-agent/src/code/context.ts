/**
 * One code context: a named kernel whose variables persist between runs (docs/adr/0033). The
 * kernel starts on first use; runs go one at a time in arrival order (a bounded queue); each run
 * has a deadline after which the kernel is interrupted (SIGINT: KeyboardInterrupt in Python), and
 * if it does not come back within INTERRUPT_GRACE_MS it is killed, so the context is usable after
 * `while True: pass` either way (with its state when the interrupt worked). A kernel that dies
 * ends the run with `kernel-died`; the next run starts a new one and says `contextReset`.
 */
import type { CodeContext as ContextInfo, CodeDataEvent, CodeLanguage } from '@sandbox-platform/api';

import { errorMessage, type Logger } from '../log.js';
import type { BridgeLine, EventLine } from './bridge-lines.js';
import { Kernel, type KernelSpec } from './kernel.js';
import type { RunEnd, RunOutput } from './run-output.js';

/** After an interrupt (deadline, interrupt call), how long the kernel may take before it is killed. */
export const INTERRUPT_GRACE_MS = 3000;

/** What a context needs from its table. */
export interface ContextDeps {
  spec: KernelSpec;
  /** A new private directory path for a kernel (not created yet). */
  kernelDir: () => string;
  /** Runs that may wait behind the running one. */
  maxQueued: number;
  logger: Logger;
}

/** Why the running run was interrupted, which becomes its end status. */
type StopReason = 'timeout' | 'interrupted';

/** The queue is full (409 context-busy). */
export class ContextBusyError extends Error {
  override readonly name = 'ContextBusyError';
}

/** One queued or running run. */
interface Run {
  id: string;
  code: string;
  timeoutMs: number;
  out: RunOutput;
  started: number;
  reason?: StopReason;
  /** A new kernel was started for this run. */
  reset: boolean;
  timers: NodeJS.Timeout[];
  done: () => void;
}

/** See the module comment. */
export class CodeContext {
  readonly createdAt = new Date();
  private kernel: Kernel | undefined;
  private starting: Promise<Kernel> | undefined;
  private executionCount = 0;
  private lastRunAt: Date | undefined;
  /** The next run gets a new kernel (first run, or after a restart or death). */
  private fresh = true;
  private running: Run | undefined;
  private readonly queue: Run[] = [];
  private nextId = 1;
  private removed = false;

  constructor(
    readonly name: string,
    readonly language: CodeLanguage,
    private readonly deps: ContextDeps,
  ) {}

  /** The wire description. */
  info(): ContextInfo {
    const state = this.starting ? 'starting' : !this.kernel ? 'stopped' : this.running ? 'busy' : 'idle';
    const info: ContextInfo = {
      name: this.name,
      language: this.language,
      state,
      executionCount: this.executionCount,
      createdAt: this.createdAt.toISOString(),
    };
    if (this.kernel && this.kernel.pid > 0) info.pid = this.kernel.pid;
    if (this.lastRunAt) info.lastRunAt = this.lastRunAt.toISOString();
    return info;
  }

  /** Starts the kernel unless one runs; rejects with KernelStartError when it cannot run. */
  async ensureStarted(): Promise<void> {
    if (this.kernel) return;
    this.starting ??= this.startKernel();
    try {
      await this.starting;
    } finally {
      this.starting = undefined;
    }
  }

  private async startKernel(): Promise<Kernel> {
    // The kernel reports its end through this holder, filled once it answered.
    const started: { kernel?: Kernel } = {};
    const kernel = await Kernel.start(this.deps.spec, this.deps.kernelDir(), {
      line: (line) => this.onLine(line),
      gone: (reason) => {
        if (started.kernel) this.onGone(started.kernel, reason);
      },
    });
    started.kernel = kernel;
    if (this.removed) {
      kernel.stop('context removed');
      throw new Error('the context was removed while its kernel started');
    }
    this.kernel = kernel;
    this.executionCount = 0;
    this.deps.logger.info('kernel started', { context: this.name, pid: kernel.pid });
    return kernel;
  }

  /**
   * Queues a run; resolves when it ended (its end line written). `cancel` registers the caller's
   * going away: a queued run is dropped, a running one interrupted.
   */
  run(code: string, timeoutMs: number, out: RunOutput): { ended: Promise<void>; cancel: () => void } {
    if (this.queue.length >= this.deps.maxQueued) {
      throw new ContextBusyError(`context ${this.name} has ${this.queue.length} runs waiting`);
    }
    let done!: () => void;
    const ended = new Promise<void>((resolve) => (done = resolve));
    const run: Run = {
      id: String(this.nextId++),
      code,
      timeoutMs,
      out,
      started: 0,
      reset: false,
      timers: [],
      done,
    };
    this.queue.push(run);
    this.pump();
    const cancel = (): void => {
      const at = this.queue.indexOf(run);
      if (at >= 0) {
        this.queue.splice(at, 1);
        done();
      } else if (this.running === run) this.stopRun('interrupted');
    };
    return { ended, cancel };
  }

  /** Interrupts the running run (SIGINT); false when none runs. */
  interrupt(): boolean {
    if (!this.running) return false;
    this.stopRun('interrupted');
    return true;
  }

  /** Kills the kernel and starts a new one: every variable is gone. */
  async restart(): Promise<void> {
    this.killKernel('restart', 'interrupted');
    await this.ensureStarted();
  }

  /** Kills the kernel, ends the running run and drops the queued ones (the context is removed). */
  remove(reason: string): Promise<void> {
    this.removed = true;
    for (const run of this.queue.splice(0)) run.done();
    const kernel = this.kernel;
    this.killKernel(reason, 'interrupted');
    return kernel ? kernel.closed() : Promise.resolve();
  }

  private pump(): void {
    if (this.running || this.queue.length === 0) return;
    const run = this.queue.shift()!;
    this.running = run;
    void this.start(run);
  }

  private async start(run: Run): Promise<void> {
    run.started = Date.now();
    this.lastRunAt = new Date();
    run.reset = this.fresh;
    try {
      await this.ensureStarted();
    } catch (err) {
      run.out.error({ type: 'error', name: 'KernelStartError', value: errorMessage(err), traceback: [] });
      return this.finish(run, { status: 'kernel-died', contextReset: run.reset });
    }
    if (this.running !== run) return;
    if (run.reason) return this.finish(run, { status: run.reason, contextReset: run.reset }); // cancelled meanwhile
    this.fresh = false;
    run.timers.push(setTimeout(() => this.stopRun('timeout'), run.timeoutMs));
    this.kernel!.execute(run.id, run.code);
  }

  /** Interrupts the running run; kills the kernel when the interrupt does not end it in time. */
  private stopRun(reason: StopReason): void {
    const run = this.running;
    if (!run || run.reason) return;
    run.reason = reason;
    if (!this.kernel) return; // still starting: start() ends it
    this.kernel.interrupt();
    run.timers.push(
      setTimeout(
        () => this.killKernel(`${reason}: the interrupt was not honoured`, reason),
        INTERRUPT_GRACE_MS,
      ),
    );
  }

  private onLine(line: BridgeLine): void {
    const run = this.running;
    if (!run || !('id' in line) || line.id !== run.id) return; // a late line of an ended run
    if (line.type === 'done') {
      run.out.addDropped(line.dropped);
      if (line.executionCount !== undefined) this.executionCount = line.executionCount;
      const status = line.status === 'ok' ? 'ok' : (run.reason ?? 'error');
      return this.finish(run, { status, executionCount: line.executionCount, contextReset: run.reset });
    }
    this.forward(run, line);
  }

  private forward(run: Run, line: EventLine): void {
    if (line.type === 'stdout' || line.type === 'stderr') run.out.stream(line.type, line.text);
    else if (line.type === 'error') run.out.error(line);
    else run.out.data(line as CodeDataEvent & { id: string });
  }

  private onGone(kernel: Kernel, reason: string): void {
    if (this.kernel !== kernel) return;
    this.kernel = undefined;
    this.fresh = true;
    this.deps.logger.info('kernel ended', { context: this.name, reason });
    const run = this.running;
    if (!run || run.started === 0) return;
    if (!run.reason) run.out.error({ type: 'error', name: 'KernelDied', value: reason, traceback: [] });
    this.finish(run, { status: run.reason ?? 'kernel-died', contextReset: run.reset });
  }

  private killKernel(reason: string, runStatus: StopReason): void {
    const kernel = this.kernel;
    if (!kernel) return;
    const run = this.running;
    if (run && run.started > 0) run.reason ??= runStatus;
    this.onGone(kernel, reason);
    kernel.stop(reason);
  }

  private finish(run: Run, end: Omit<RunEnd, 'durationMs'>): void {
    if (this.running !== run) return;
    for (const t of run.timers) clearTimeout(t);
    run.out.end({ ...end, durationMs: Date.now() - run.started });
    this.running = undefined;
    run.done();
    this.pump();
  }
}
