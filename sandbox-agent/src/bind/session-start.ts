/**
 * What the agent does when its session starts (docs/adr/0016-warm-pools.md, "Env, Secrets and
 * startup at bind time"): a Pod created for its session starts with the session's env in its
 * carriers and its startup command in STARTUP_COMMAND_ENV; a warm Pod gets both in its one bind.
 *
 * - The env: merged into the one session-env record the shell, the background processes and the
 *   terminals read at every spawn (so a restarted bash, a new process and a new terminal have it),
 *   and exported in the bash that is already running, by a command queued before anything else can
 *   reach it (a bind comes before any authenticated call). The values go to bash through its
 *   protocol pipe, never through an argument list, a file or a log line.
 * - The startup command: started as an ordinary background process (listed, read, signalled and
 *   removed like any), once per start of the agent in the session's Pod.
 */
import type { ProcessStartRequest } from '@sandbox-platform/api';

import { errorMessage, type Logger } from '../log.js';
import type { ExecRequest, ExecResult } from '../shell/persistent-shell.js';
import type { OutputObserver } from '../shell/execution.js';
import { bashWord, ENV_NAME } from '../shell/wrapper.js';

/** One variable of the session's env. */
export interface EnvEntry {
  readonly name: string;
  readonly value: string;
}

/** What the session start needs. */
export interface SessionStartDeps {
  /**
   * The session's env as the shell, the processes and the terminals read it at each spawn: this
   * very record (shared by reference), which the bind extends.
   */
  readonly sessionEnv: Record<string, string>;
  readonly shell: { run(request: ExecRequest, observer: OutputObserver): Promise<ExecResult> };
  readonly processes: { start(request: ProcessStartRequest): Promise<{ readonly id: string }> };
  readonly logger: Logger;
}

/** Longest the export of the env may take in the shell (it is a few builtins). */
const EXPORT_TIMEOUT_SECONDS = 30;

const DISCARD: OutputObserver = { onOutput: () => undefined };

/** See the module comment. */
export class SessionStart {
  constructor(private readonly d: SessionStartDeps) {}

  /**
   * Adds the bind's env to the session's env (a name given again wins over the template's) and
   * exports it in the running bash. Returns once the export is queued; the promise it keeps ends
   * with the export, for tests. Never throws: a name the schema let through but the shell refuses
   * (bash's own readonly variables) is skipped, as at a cold start.
   */
  applyEnv(env: readonly EnvEntry[]): Promise<void> {
    const usable = env.filter((e) => ENV_NAME.test(e.name) && !e.value.includes('\0'));
    if (usable.length === 0) return Promise.resolve();
    for (const { name, value } of usable) this.d.sessionEnv[name] = value;
    return this.d.shell
      .run({ command: exportScript(usable), timeoutSeconds: EXPORT_TIMEOUT_SECONDS }, DISCARD)
      .then(
        (result) => {
          if (result.exitCode !== 0 || result.timedOut)
            this.d.logger.warn('exporting the session env in the shell failed', {
              exitCode: result.exitCode,
              timedOut: result.timedOut,
            });
        },
        (err: unknown) => {
          // A bash that died meanwhile is restarted with the carriers: the env is there anyway.
          this.d.logger.warn('exporting the session env in the shell failed', { error: errorMessage(err) });
        },
      );
  }

  /**
   * Starts the startup command as a background process (nothing when there is none). Never
   * throws; a failed start is logged (the command itself never is: it may name anything).
   */
  startup(command: string | undefined): Promise<void> {
    if (command === undefined || command === '') return Promise.resolve();
    return this.d.processes.start({ command }).then(
      (proc) => this.d.logger.info('startup command started', { id: proc.id }),
      (err: unknown) => this.d.logger.error('cannot start the startup command', { error: errorMessage(err) }),
    );
  }
}

/**
 * `export NAME=value` for each entry, each value one bash word (bashWord: ASCII, any byte spelled
 * out), each line unable to end the script (bash refuses its readonly variables).
 */
export function exportScript(env: readonly EnvEntry[]): string {
  return `${env.map((e) => `command export ${e.name}=${bashWord(e.value)} 2>/dev/null || :`).join('\n')}\n`;
}
