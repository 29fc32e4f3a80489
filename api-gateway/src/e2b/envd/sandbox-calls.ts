/**
 * What the envd handlers share: the session of a call, its options, the short commands they run
 * in the sandbox, and the agent process a selector names.
 */
import type { ProcessInfo as AgentProcess } from '@sandbox-platform/api';
import type { HandlerContext } from '@connectrpc/connect';
import { createContextKey } from '@connectrpc/connect';

import { ProblemError } from '../../errors.js';
import type { ExecResult, CallOptions } from '../../exec/types.js';
import type { ExecService } from '../../service/exec-service.js';
import type { ProcessService, SessionRef } from '../../service/process-service.js';
import type { EnvdCall } from '../auth-bridge.js';
import { freshBash } from './fs-scripts.js';
import { parseMarker } from './launcher.js';

/** The authenticated call, put in every handler's context by the envd plugin. */
export const ENVD_CALL = createContextKey<EnvdCall | undefined>(undefined, { description: 'e2b envd call' });

/** Users the sandbox has: E2B's default user name, and the image's (both are uid 1000). */
const USERS: ReadonlySet<string> = new Set(['user', 'sandbox']);

/** The session a handler acts on, after checking the user an SDK may have named. */
export function sessionOf(ctx: HandlerContext): SessionRef {
  const call = ctx.values.get(ENVD_CALL);
  if (!call) throw new ProblemError('unauthorized', 'missing E2B access token');
  checkUser(call.user);
  return call.sandbox;
}

/** Refuses users the sandbox does not have (it runs one unprivileged user; there is no root). */
export function checkUser(user: string | undefined): void {
  if (user === undefined || user === '' || USERS.has(user)) return;
  throw new ProblemError(
    'invalid-request',
    `user ${JSON.stringify(user.slice(0, 64))} is not available: the sandbox runs as one unprivileged user ("user"); there is no root`,
  );
}

/** Call options of a handler: the client leaving (or its deadline) cancels the sandbox calls. */
export function callOptions(ctx: HandlerContext): CallOptions {
  return { signal: ctx.signal };
}

/** Runs a short script (fs-scripts.ts) in the sandbox; `stdin` is written to it. */
export async function runScript(
  execs: ExecService,
  ref: SessionRef,
  run: { script: string; args?: readonly string[]; stdin?: Buffer; timeoutSeconds?: number },
  opts: CallOptions,
): Promise<ExecResult> {
  const input = {
    command: freshBash(run.script, run.args),
    timeoutSeconds: run.timeoutSeconds ?? 30,
    ...(run.stdin ? { stdin: run.stdin.toString('base64'), stdinEncoding: 'base64' as const } : {}),
  };
  const result = await execs.exec(ref.namespace, ref.name, input, opts);
  if (result.timedOut) {
    throw new ProblemError(
      'upstream-timeout',
      `the sandbox did not finish the call within ${input.timeoutSeconds} s`,
    );
  }
  return result;
}

/** A script's stdout as bytes. */
export function stdoutBytes(r: ExecResult): Buffer {
  return Buffer.from(r.stdout, r.stdoutEncoding === 'base64' ? 'base64' : 'utf8');
}

/** The first line of a script's stderr (bounded), for an error message. */
export function stderrLine(r: ExecResult): string {
  const text = Buffer.from(r.stderr, r.stderrEncoding === 'base64' ? 'base64' : 'utf8').toString('utf8');
  return (text.split('\n').find((l) => l.trim() !== '') ?? `exit status ${r.exitCode}`).slice(0, 512);
}

/** A process selector of envd (pid or tag). */
export type Selector = { case: 'pid'; value: number } | { case: 'tag'; value: string } | { case: undefined };

/** The agent process a selector names (running or exited); 404 process-not-found otherwise. */
export async function findProcess(
  processes: ProcessService,
  ref: SessionRef,
  selector: Selector | undefined,
  opts: CallOptions,
): Promise<AgentProcess> {
  if (!selector || selector.case === undefined) {
    throw new ProblemError('invalid-request', 'a process selector (pid or tag) is required');
  }
  const { processes: all } = await processes.list(ref, opts);
  const found =
    selector.case === 'pid'
      ? all.find((p) => p.pid === selector.value)
      : all.find((p) => parseMarker(p.command)?.tag === selector.value);
  if (!found) {
    throw new ProblemError(
      'process-not-found',
      `no process with ${selector.case} ${String(selector.value).slice(0, 64)}`,
    );
  }
  return found;
}

/** Like findProcess, for calls that need it running (exited: 404, as envd forgets exited processes). */
export async function findRunning(
  processes: ProcessService,
  ref: SessionRef,
  selector: Selector | undefined,
  opts: CallOptions,
): Promise<AgentProcess> {
  const p = await findProcess(processes, ref, selector, opts);
  if (p.state !== 'running') throw new ProblemError('process-not-found', `process ${p.pid} has exited`);
  return p;
}
