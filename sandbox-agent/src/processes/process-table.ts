/**
 * The agent's background processes: started on request, listed, signalled, waited for, removed.
 * They live only here (in the agent's memory) and end with the agent: the table is the one place
 * that lists them, and stopping the agent stops them. Bounded: at most `maxProcesses` are held
 * (running or exited and not yet removed), each with two output rings of `outputBytes`.
 *
 * Each process runs `bash --noprofile --norc -c` with the environment the persistent shell starts
 * with (the agent's secrets removed, the session's env exported the same way), in the workspace
 * or the requested directory, with stdin from /dev/null.
 *
 * The table keeps one spare bash (SpareBash), started after a start once its process exited (or a
 * moment later), so the next start skips Node's spawn (a fork of the whole agent) and bash's own
 * start-up: E2B's commands are each a process (docs/adr/0035). A spare started with another env
 * (a warm Pod's bind changed the session env since) or killed meanwhile is discarded, and the
 * start spawns as before; stopping the table kills it.
 */
import { randomBytes } from 'node:crypto';

import type { ProcessInfo, ProcessStartRequest } from '@sandbox-platform/api';

import { HttpProblem } from '../http/problem.js';
import type { Logger } from '../log.js';
import { errorMessage } from '../log.js';
import { withCarriers } from '../shell/persistent-shell.js';
import { killGroupLeftovers, ticksAgo } from '../shell/processes.js';
import { settlesWithin } from '../shell/timing.js';
import { ENV_NAME, sessionEnvInit, shellQuote } from '../shell/wrapper.js';
import {
  ManagedProcess,
  SPARE_SCRIPT_MAX_BYTES,
  SpareBash,
  SpawnError,
  type SpawnSpec,
} from './managed-process.js';

/** Options of {@link ProcessTable}. */
export interface ProcessTableOptions {
  bashPath: string;
  workspace: string;
  /** The shell's start environment (agent secrets already removed). */
  env: NodeJS.ProcessEnv;
  /** The session's env (spec.env), exported in each process's bash. */
  sessionEnv: Readonly<Record<string, string>>;
  /** Most processes held, running or exited. */
  maxProcesses: number;
  /** Ring size per output stream per process. */
  outputBytes: number;
  logger: Logger;
  /** How long processes get after SIGTERM when the agent stops, before SIGKILL. Default 2 s. */
  killGraceMs?: number;
  /** Keep a spare bash for the next start (see SpareBash). Default true. */
  spare?: boolean;
}

/**
 * After a start claimed the spare (or spawned), the next spare is started once the new process
 * exited (a command's exit is answered before the spawn blocks the event loop) or after this long
 * (a server that keeps running).
 */
const SPARE_AFTER_MS = 100;
/**
 * Spares kept: two, so that a start finds one that finished starting up while the other (started
 * after the previous command) may still be starting (a command per round trip, back to back).
 */
const SPARES = 2;

/** See the module comment. */
export class ProcessTable {
  private readonly processes = new Map<string, ManagedProcess>();
  /** Starts in flight: counted against the cap until their bash exists. */
  private readonly reserved = new Set<symbol>();
  private closing = false;
  /** Bashes started ahead for the next starts, oldest first (at most SPARES). */
  private readonly spares: SpareBash[] = [];
  private spareStarting = false;

  constructor(private readonly opts: ProcessTableOptions) {}

  /**
   * Starts a process; 409 too-many-processes when the table is full. `logger`: the request's (with
   * its trace ids) for this call's line; the process's own later lines use the table's.
   */
  async start(request: ProcessStartRequest, logger: Logger = this.opts.logger): Promise<ManagedProcess> {
    if (this.closing) throw new HttpProblem('shell-unavailable', 'the agent is shutting down');
    this.checkRoom();
    const { opts } = this;
    const id = randomBytes(6).toString('hex');
    // Held before the spawn resolves, so concurrent starts cannot overshoot the cap.
    const placeholder = Symbol(id);
    this.reserved.add(placeholder);
    try {
      const spec: SpawnSpec = {
        id,
        command: request.command,
        cwd: request.cwd,
        bashPath: opts.bashPath,
        script: processScript(request, Object.keys(opts.sessionEnv)),
        workspace: opts.workspace,
        env: withCarriers(opts.env, opts.sessionEnv),
        outputBytes: opts.outputBytes,
        logger: opts.logger,
      };
      const spare = this.takeSpare(spec);
      const proc = spare ? ManagedProcess.claim(spare, spec) : await ManagedProcess.start(spec);
      this.processes.set(id, proc);
      logger.info('process started', { id, pid: proc.pid, spare: spare !== undefined });
      this.prepareSpare(proc);
      return proc;
    } catch (err) {
      if (err instanceof SpawnError) throw new HttpProblem('shell-unavailable', err.message, { cause: err });
      throw err;
    } finally {
      this.reserved.delete(placeholder);
    }
  }

  /**
   * The oldest spare fit for `spec` (waiting, same env, a script it takes), or none. Spares that
   * are not (killed meanwhile, or the session's env changed since: a warm Pod's bind) are discarded.
   */
  private takeSpare(spec: SpawnSpec): SpareBash | undefined {
    if (Buffer.byteLength(spec.script) >= SPARE_SCRIPT_MAX_BYTES - 1024) return undefined;
    for (let spare = this.spares.shift(); spare; spare = this.spares.shift()) {
      if (spare.waiting && sameEnv(spare.env, spec.env)) return spare;
      spare.discard();
    }
    return undefined;
  }

  /** Starts the next spares after `proc` exited or SPARE_AFTER_MS, whichever comes first. */
  private prepareSpare(proc: ManagedProcess): void {
    if (this.opts.spare === false || this.closing || this.spares.length >= SPARES || this.spareStarting)
      return;
    this.spareStarting = true;
    let timer: NodeJS.Timeout | undefined;
    const go = (): void => {
      if (timer === undefined) return;
      clearTimeout(timer);
      timer = undefined;
      // After the I/O of this turn: the exit line of a follow goes out before the spawn.
      setImmediate(() => void this.startSpare());
    };
    timer = setTimeout(go, SPARE_AFTER_MS);
    void proc.exited.then(go);
  }

  private async startSpare(): Promise<void> {
    try {
      while (!this.closing && this.spares.length < SPARES) {
        const { bashPath, workspace, env, sessionEnv, logger } = this.opts;
        const spare = await SpareBash.start({
          bashPath,
          workspace,
          env: withCarriers(env, sessionEnv),
          logger,
        });
        if (this.closing) spare.discard();
        else this.spares.push(spare);
        // A turn of the event loop between two spawns: a start that came meanwhile goes first.
        await new Promise((resolve) => setImmediate(resolve));
      }
    } catch (err) {
      // No spare: the next start spawns (and reports a failure to spawn itself).
      this.opts.logger.warn('cannot start a spare bash', { error: errorMessage(err) });
    } finally {
      this.spareStarting = false;
    }
  }

  private checkRoom(): void {
    const held = this.processes.size + this.reserved.size;
    if (held < this.opts.maxProcesses) return;
    const exited = [...this.processes.values()].filter((p) => !p.running).length;
    throw new HttpProblem(
      'too-many-processes',
      `the agent holds ${held} processes, its maximum (${exited} exited: remove them with DELETE /v1/processes/<id>)`,
    );
  }

  /** Spares waiting for a start (tests, logs). */
  get spareCount(): number {
    return this.spares.filter((s) => s.waiting).length;
  }

  /** Every process, oldest first. */
  list(): ProcessInfo[] {
    return [...this.processes.values()].map((p) => p.info());
  }

  /** The process with this id; 404 process-not-found otherwise. */
  get(id: string): ManagedProcess {
    const proc = this.processes.get(id);
    if (!proc) throw new HttpProblem('process-not-found', `no process has the id "${truncate(id)}"`);
    return proc;
  }

  /** Signals the process group; 409 process-exited when it has exited. */
  signal(id: string, signal: NodeJS.Signals, logger: Logger = this.opts.logger): ProcessInfo {
    const proc = this.get(id);
    if (!proc.running)
      throw new HttpProblem('process-exited', `process ${id} has exited; it cannot be signalled`);
    // A group already gone (ESRCH) is a process about to be recorded as exited: not an error.
    proc.signal(signal);
    logger.info('process signalled', { id, signal });
    return proc.info();
  }

  /** Waits up to `timeoutMs` (or until `abort`) for the exit; the answer's state says whether it came. */
  async wait(id: string, timeoutMs: number, abort?: AbortSignal): Promise<ProcessInfo> {
    const proc = this.get(id);
    if (proc.running && timeoutMs > 0) {
      const aborted = new Promise<void>((resolve) =>
        abort?.addEventListener('abort', () => resolve(), { once: true }),
      );
      await settlesWithin(Promise.race([proc.exited, aborted]), timeoutMs);
    }
    return proc.info();
  }

  /**
   * Forgets an exited process (its output with it) and kills what it left behind in its process
   * group; 409 process-running while it runs.
   */
  async remove(id: string, logger: Logger = this.opts.logger): Promise<void> {
    const proc = this.get(id);
    if (proc.running) {
      throw new HttpProblem(
        'process-running',
        `process ${id} is running; signal it and wait for its exit first`,
      );
    }
    this.processes.delete(id);
    proc.detach();
    const killed = await killLeftovers(proc);
    logger.info('process removed', { id, leftoversKilled: killed });
  }

  /** Accepts starts again after close() (a quiesce for a suspension that was then cancelled). */
  reopen(): void {
    this.closing = false;
  }

  /** Stops every process: SIGTERM to each group, SIGKILL after the grace. New starts are refused. */
  async close(): Promise<void> {
    this.closing = true;
    for (const spare of this.spares.splice(0)) spare.discard();
    const all = [...this.processes.values()];
    const running = all.filter((p) => p.running);
    for (const proc of running) proc.signal('SIGTERM');
    await settlesWithin(Promise.all(running.map((p) => p.exited)), this.opts.killGraceMs ?? 2000);
    for (const proc of running) if (proc.running) proc.signal('SIGKILL');
    for (const proc of all) {
      proc.detach();
      await killLeftovers(proc).catch((err: unknown) => {
        this.opts.logger.warn('cannot kill what a process left', { id: proc.id, error: errorMessage(err) });
      });
    }
    this.processes.clear();
  }
}

/**
 * The script of a process's bash: export the session env (as the persistent shell does), enter
 * the directory (failing like `cd dir && command`), export the per-call env, run the command.
 */
export function processScript(request: ProcessStartRequest, sessionEnvNames: readonly string[]): string {
  const lines = [sessionEnvInit(sessionEnvNames)];
  if (request.cwd !== undefined) lines.push(`builtin cd -- ${shellQuote(request.cwd)} || builtin exit 1\n`);
  for (const [name, value] of Object.entries(request.env ?? {})) {
    if (!ENV_NAME.test(name)) throw new Error(`invalid variable name: ${name}`);
    lines.push(`builtin export ${name}=${shellQuote(value ?? '')}\n`);
  }
  lines.push(`command eval ${shellQuote(request.command)}\n`);
  return lines.join('');
}

/** Whether two environments hold the same variables with the same values. */
function sameEnv(a: NodeJS.ProcessEnv, b: NodeJS.ProcessEnv): boolean {
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((k) => Object.hasOwn(b, k) && a[k] === b[k]);
}

/**
 * Kills what an exited process left in its group (see killGroupLeftovers); 0 while it runs. A
 * group with no member left (the usual end of a command) is seen with one kill(-pgid, 0), without
 * the scan of /proc (a read per process of the Pod, each dear under gVisor, on every removal).
 */
async function killLeftovers(proc: ManagedProcess): Promise<number> {
  const exitedAt = proc.exitedAt;
  if (exitedAt === undefined) return 0;
  if (!groupExists(proc.pid)) return 0;
  return killGroupLeftovers(proc.pid, ticksAgo(Date.now() - exitedAt.getTime()) + 1);
}

/**
 * Whether any process has the process group `pgid` (ESRCH: none). EPERM (a member we may not
 * signal) counts as existing: the scan then decides, as it did for every removal.
 */
export function groupExists(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
    return true;
  }
}

function truncate(id: string): string {
  return id.length > 64 ? `${id.slice(0, 64)}...` : id;
}
