/** `exec NAME -- CMD...`: streams the command's output and exits with its exit code. */
import { decodeOutput } from '@sandbox-platform/client';
import type { ExecRequest } from '@sandbox-platform/client';

import { UsageError } from '../errors.js';
import { write, type Context } from '../io.js';
import { commandLine, keyValues, seconds } from '../parse.js';

export async function exec(ctx: Context): Promise<number> {
  const [name, ...extra] = ctx.args;
  if (!name) throw new UsageError(`exec needs a session: ${ctx.io.prog} exec NAME -- CMD...`);
  if (extra.length) {
    throw new UsageError(
      `exec takes one NAME before "--", got ${ctx.args.join(' ')}: put the command after --`,
    );
  }
  if (ctx.rest.length === 0)
    throw new UsageError(`exec needs a command after --: ${ctx.io.prog} exec ${name} -- CMD...`);
  const req = execRequest(ctx);
  const exit = await ctx
    .client()
    .execStreamTo(
      name,
      req,
      (stream, data, encoding) =>
        write(stream === 'stdout' ? ctx.io.stdout : ctx.io.stderr, decodeOutput(data, encoding)),
      { signal: ctx.io.signal },
    );
  if (exit.timedOut)
    await write(ctx.io.stderr, `${ctx.io.prog}: the command timed out (exit ${exit.exitCode})\n`);
  if (exit.truncated)
    await write(ctx.io.stderr, `${ctx.io.prog}: output was truncated by the sandbox's cap\n`);
  return exit.exitCode;
}

function execRequest(ctx: Context): ExecRequest {
  const f = ctx.flags;
  const req: ExecRequest = { command: commandLine(ctx.rest) };
  if (typeof f.timeout === 'string') req.timeoutSeconds = seconds(f.timeout, '--timeout');
  if (typeof f.wait === 'string') req.waitSeconds = seconds(f.wait, '--wait');
  if (typeof f.cwd === 'string') req.cwd = f.cwd;
  const env = keyValues(f.env as string[] | undefined, '--env');
  if (env) req.env = env;
  return req;
}
