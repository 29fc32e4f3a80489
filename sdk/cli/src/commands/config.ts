/** `config view | path | set KEY VALUE` (VALUE `-` reads it from stdin, so a key stays out of shell history). */
import { redacted, setConfigValue } from '../config.js';
import { UsageError } from '../errors.js';
import { write, type Context } from '../io.js';
import { renderValue } from '../output.js';

export async function config(ctx: Context): Promise<number> {
  const [sub, key, value, ...extra] = ctx.args;
  if (sub === 'view' && !key) {
    const out = ctx.settings.output === 'json' ? 'json' : 'yaml';
    await write(ctx.io.stdout, renderValue(out, redacted(ctx.settings)));
    return 0;
  }
  if (sub === 'path' && !key) {
    await write(ctx.io.stdout, ctx.settings.configPath + '\n');
    return 0;
  }
  if (sub === 'set' && key && value !== undefined && !extra.length) {
    const v = value === '-' ? (await readStdin(ctx)).trim() : value;
    setConfigValue(ctx.settings.configPath, key, v);
    await write(ctx.io.stderr, `set ${key} in ${ctx.settings.configPath}\n`);
    return 0;
  }
  throw new UsageError(`usage: ${ctx.io.prog} config view | path | set KEY VALUE`);
}

async function readStdin(ctx: Context): Promise<string> {
  let text = '';
  for await (const chunk of ctx.io.stdin) {
    text += String(chunk);
    if (text.length > 64 * 1024) throw new UsageError('config value on stdin is longer than 64 KiB');
  }
  return text;
}
