/** Session commands: create, get/list, delete, suspend, resume, wait. */
import type { CreateSessionRequest, ExecTransport, ShutdownPolicy } from '@sandbox-platform/client';

import { UsageError } from '../errors.js';
import { write, type Context } from '../io.js';
import { render } from '../output.js';
import { keyValues, seconds } from '../parse.js';

const DEFAULT_WAIT_S = 120;

/** `create [NAME]`: create-or-get; `--wait` also waits until it is Ready. */
export async function create(ctx: Context): Promise<number> {
  const [name, ...extra] = ctx.args;
  if (extra.length) throw new UsageError(`create takes one NAME, got ${ctx.args.length}`);
  const client = ctx.client();
  const req = createRequest(ctx, name);
  const { session, created } = await client.createSession(req, { signal: ctx.io.signal });
  let shown = session;
  if (ctx.flags.wait) {
    shown = await client.waitUntilReady(session.name, { timeoutMs: waitMs(ctx), signal: ctx.io.signal });
  }
  if (ctx.settings.output === 'table') {
    await write(ctx.io.stderr, `session "${session.name}" ${created ? 'created' : 'already exists'}\n`);
  }
  await write(ctx.io.stdout, render(ctx.settings.output, shown));
  return 0;
}

function createRequest(ctx: Context, name: string | undefined): CreateSessionRequest {
  const f = ctx.flags;
  const req: CreateSessionRequest = {};
  if (name) req.name = name;
  if (typeof f.image === 'string') req.image = f.image;
  const env = keyValues(f.env as string[] | undefined, '--env');
  if (env) req.env = env;
  if (typeof f['idle-timeout'] === 'string')
    req.idleTimeoutSeconds = seconds(f['idle-timeout'], '--idle-timeout');
  if (typeof f['max-lifetime'] === 'string')
    req.maxLifetimeSeconds = seconds(f['max-lifetime'], '--max-lifetime');
  if (typeof f.transport === 'string')
    req.execTransport = oneOf(f.transport, ['Agent', 'KubernetesExec'], '--transport');
  if (typeof f['shutdown-policy'] === 'string') {
    req.shutdownPolicy = oneOf(f['shutdown-policy'], ['Delete', 'Retain', 'Suspend'], '--shutdown-policy');
  }
  if (f['persistent-workspace'] === true) req.persistentWorkspace = true;
  if (typeof f.pool === 'string') req.pool = f.pool;
  return req;
}

function oneOf<T extends ExecTransport | ShutdownPolicy>(value: string, allowed: T[], flag: string): T {
  if ((allowed as string[]).includes(value)) return value as T;
  throw new UsageError(`${flag}: "${value}" is not one of ${allowed.join(', ')}`);
}

/** `get [NAME...]` (no name: list), `list`. */
export async function get(ctx: Context): Promise<number> {
  const client = ctx.client();
  const opts = { signal: ctx.io.signal };
  if (ctx.args.length === 0) {
    await write(ctx.io.stdout, render(ctx.settings.output, await client.listSessions(opts)));
    return 0;
  }
  const sessions = [];
  for (const name of ctx.args) sessions.push(await client.getSession(name, opts));
  await write(ctx.io.stdout, render(ctx.settings.output, sessions.length === 1 ? sessions[0]! : sessions));
  return 0;
}

/** `delete NAME...`. */
export async function remove(ctx: Context): Promise<number> {
  if (ctx.args.length === 0) throw new UsageError('delete needs at least one session NAME');
  const client = ctx.client();
  for (const name of ctx.args) {
    await client.deleteSession(name, { signal: ctx.io.signal });
    await write(ctx.io.stdout, `session "${name}" deleted\n`);
  }
  return 0;
}

/** `suspend NAME...`: the Pods go; workspaces and tokens stay. */
export async function suspend(ctx: Context): Promise<number> {
  if (ctx.args.length === 0) throw new UsageError('suspend needs at least one session NAME');
  const client = ctx.client();
  for (const name of ctx.args) {
    const session = await client.suspendSession(name, { signal: ctx.io.signal });
    if (ctx.settings.output === 'table') await write(ctx.io.stdout, `session "${name}" suspended\n`);
    else await write(ctx.io.stdout, render(ctx.settings.output, session));
  }
  return 0;
}

/** `resume NAME... [--wait D]`: a new Pod on the same workspace; with --wait, until it is Ready. */
export async function resume(ctx: Context): Promise<number> {
  if (ctx.args.length === 0) throw new UsageError('resume needs at least one session NAME');
  const w = ctx.flags.wait;
  const waitSeconds = typeof w === 'string' ? seconds(w, '--wait') : undefined;
  const client = ctx.client();
  for (const name of ctx.args) {
    const session = await client.resumeSession(name, waitSeconds === undefined ? {} : { waitSeconds }, {
      signal: ctx.io.signal,
    });
    if (ctx.settings.output === 'table') {
      await write(ctx.io.stdout, `session "${name}" ${session.ready ? 'resumed and ready' : 'resuming'}\n`);
    } else await write(ctx.io.stdout, render(ctx.settings.output, session));
  }
  return 0;
}

/** `wait NAME`: until Ready (exit 0), or the timeout (exit 1 with the last reason). */
export async function wait(ctx: Context): Promise<number> {
  const [name, ...extra] = ctx.args;
  if (!name || extra.length) throw new UsageError('wait needs exactly one session NAME');
  const session = await ctx.client().waitUntilReady(name, { timeoutMs: waitMs(ctx), signal: ctx.io.signal });
  if (ctx.settings.output === 'table') await write(ctx.io.stdout, `session "${name}" is ready\n`);
  else await write(ctx.io.stdout, render(ctx.settings.output, session));
  return 0;
}

function waitMs(ctx: Context): number {
  const t = ctx.flags.timeout;
  return (typeof t === 'string' ? seconds(t, '--timeout') : DEFAULT_WAIT_S) * 1000;
}
