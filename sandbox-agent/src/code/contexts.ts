/**
 * The agent's code contexts (docs/adr/0033): a bounded table of named contexts, each with its own
 * engine, and the private directory their IPython directories live in (mode 0700
 * under TMPDIR, removed when the agent stops). Contexts live in the agent's memory only and end
 * with it, like background processes.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';

import type { CodeLanguage } from '@sandbox-platform/api';

import { errorMessage, type Logger } from '../log.js';
import { CodeContext } from './context.js';

/** Defaults of {@link CodeOptions}. */
export const CODE_DEFAULTS = {
  python: 'python3',
  bridgePath: '/opt/sandbox-agent/kernel-bridge.py',
  maxContexts: 4,
  maxQueued: 8,
  startTimeoutMs: 60_000,
} as const;

/** Tunables of the code interpreter. */
export interface CodeOptions {
  /** The Python interpreter kernels and the bridge run on. */
  python: string;
  /** kernel-bridge.py. */
  bridgePath: string;
  /** Contexts held at once (each is a kernel: tens of MiB). */
  maxContexts: number;
  /** Runs waiting per context. */
  maxQueued: number;
  /** Longest wait for a kernel to answer at start. */
  startTimeoutMs: number;
}

/** What the table needs from the composition root. */
export interface ContextsDeps extends CodeOptions {
  /** Parent of the private directory (TMPDIR). */
  tempDir: string;
  workspace: string;
  /** The environment kernels start with (the shell's, with the session env as it is now). */
  env: () => NodeJS.ProcessEnv;
  logger: Logger;
}

/** The table is full (409 too-many-contexts). */
export class TooManyContextsError extends Error {
  override readonly name = 'TooManyContextsError';
}

/** See the module comment. */
export class CodeContexts {
  private readonly contexts = new Map<string, CodeContext>();
  private kernels = 0;

  private constructor(
    private readonly dir: string,
    private readonly deps: ContextsDeps,
  ) {}

  /** Makes the private directory. */
  static async open(deps: ContextsDeps): Promise<CodeContexts> {
    const dir = await mkdtemp(join(deps.tempDir, 'sbx-code-'));
    return new CodeContexts(dir, deps);
  }

  /** The context, or undefined. */
  get(name: string): CodeContext | undefined {
    return this.contexts.get(name);
  }

  /** The context, created (not started) when missing; throws TooManyContextsError when full. */
  getOrCreate(name: string, language: CodeLanguage): CodeContext {
    const found = this.contexts.get(name);
    if (found) return found;
    if (this.contexts.size >= this.deps.maxContexts) {
      throw new TooManyContextsError(
        `the agent holds its maximum of ${this.deps.maxContexts} code contexts; delete one first`,
      );
    }
    const d = this.deps;
    const context = new CodeContext(name, language, {
      spec: {
        python: d.python,
        bridgePath: d.bridgePath,
        workspace: d.workspace,
        env: d.env,
        startTimeoutMs: d.startTimeoutMs,
        logger: d.logger,
      },
      kernelDir: () => join(this.dir, `k${++this.kernels}`),
      maxQueued: d.maxQueued,
      logger: d.logger,
    });
    this.contexts.set(name, context);
    return context;
  }

  /** Every context, oldest first. */
  list(): CodeContext[] {
    return [...this.contexts.values()];
  }

  /** Stops and forgets a context; false when there is none of that name. */
  async remove(name: string): Promise<boolean> {
    const context = this.contexts.get(name);
    if (!context) return false;
    this.contexts.delete(name);
    await context.remove('context deleted');
    return true;
  }

  /** Stops every kernel and removes the private directory (the agent stops). */
  async close(): Promise<void> {
    const all = [...this.contexts.values()];
    this.contexts.clear();
    await Promise.all(all.map((c) => c.remove('agent stopping')));
    await rm(this.dir, { recursive: true, force: true }).catch((err: unknown) => {
      this.deps.logger.warn('cannot remove the code directory', { error: errorMessage(err) });
    });
  }
}
