/**
 * The CLI: parses the command line, resolves settings, runs one command and turns any failure into
 * one line on stderr and an exit code (errors.ts). main.ts is the composition root around it.
 */
import { parseArgs } from 'node:util';

import { SandboxClient } from '@sandbox-platform/client';

import { COMMANDS, GLOBAL_FLAGS, findCommand, type Command } from './commands.js';
import { resolveSettings, type Settings } from './config.js';
import { EXIT, UsageError, errorLine, exitCodeOf } from './errors.js';
import { write, type Context, type Io } from './io.js';
import { VERSION } from './version.js';

/** Runs the CLI; resolves to the exit code. Never throws. */
export async function run(io: Io): Promise<number> {
  try {
    return await dispatch(io);
  } catch (err) {
    const stack = io.env.SBX_DEBUG && err instanceof Error && err.stack ? `\n${err.stack}` : '';
    await write(io.stderr, `${io.prog}: error: ${errorLine(err)}${stack}\n`).catch(() => undefined);
    return exitCodeOf(err);
  }
}

async function dispatch(io: Io): Promise<number> {
  const dash = io.argv.indexOf('--');
  const before = dash < 0 ? io.argv : io.argv.slice(0, dash);
  const rest = dash < 0 ? [] : io.argv.slice(dash + 1);
  const name = commandName(before);
  if (name === undefined || name === 'help') return help(io, before);
  if (name === 'version') return version(io);
  const command = findCommand(name);
  if (!command) throw new UsageError(`unknown command "${name}" (run ${io.prog} help)`);
  const parsed = parse(
    command,
    before.filter((a, i) => i !== before.indexOf(name)),
  );
  if (parsed.values.help) {
    await write(io.stdout, commandHelp(io.prog, command));
    return 0;
  }
  if (rest.length && command.name !== 'exec' && command.name !== 'run')
    throw new UsageError(`${command.name} takes no arguments after --`);
  const settings = resolveSettings(parsed.values, io.env);
  const ctx: Context = {
    io,
    settings,
    args: parsed.positionals,
    rest,
    flags: parsed.values,
    client: () => makeClient(settings, io.prog),
  };
  return command.run(ctx);
}

/** The first word that is not a global flag or a global flag's value. */
function commandName(argv: string[]): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] ?? '';
    if (!a.startsWith('-')) return a;
    const flag = a.replace(/^-+/, '').split('=')[0] ?? '';
    const spec = GLOBAL_FLAGS[flag] ?? Object.values(GLOBAL_FLAGS).find((f) => f.short === flag);
    if (spec?.type === 'string' && !a.includes('=')) i++;
  }
  return undefined;
}

function parse(command: Command, args: string[]): ReturnType<typeof parseArgs> {
  try {
    return parseArgs({
      args,
      options: { ...GLOBAL_FLAGS, ...command.flags },
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    // node:util's messages name the flag; drop its hint about "--" (confusing for a CLI user).
    const msg = (err as Error).message.split('. To specify a positional')[0] ?? String(err);
    throw new UsageError(`${command.name}: ${msg}`);
  }
}

function makeClient(settings: Settings, prog: string): SandboxClient {
  if (!settings.url) {
    throw new UsageError(`no gateway URL: pass --url, set SANDBOX_URL, or run ${prog} config set url URL`);
  }
  if (!settings.key) {
    throw new UsageError(`no API key: set SANDBOX_KEY, run ${prog} config set key -, or pass --key`);
  }
  try {
    return new SandboxClient({
      baseUrl: settings.url,
      apiKey: settings.key,
      ...(settings.namespace ? { namespace: settings.namespace } : {}),
    });
  } catch (err) {
    throw new UsageError((err as Error).message.replace(/^SandboxClient: /, ''));
  }
}

async function version(io: Io): Promise<number> {
  await write(io.stdout, `sbx ${VERSION}\n`);
  return 0;
}

async function help(io: Io, argv: string[]): Promise<number> {
  const topic = argv.filter((a) => !a.startsWith('-') && a !== 'help')[0];
  const command = topic ? findCommand(topic) : undefined;
  if (topic && !command) throw new UsageError(`unknown command "${topic}" (run ${io.prog} help)`);
  await write(io.stdout, command ? commandHelp(io.prog, command) : overview(io.prog));
  return argv.length === 0 ? EXIT.usage : 0;
}

function overview(prog: string): string {
  const lines = COMMANDS.map((c) => `  ${c.name.padEnd(11)} ${c.summary}`);
  return `${prog}: sandbox sessions from the command line (sbx ${VERSION})

Usage: ${prog} COMMAND [flags]

Commands:
${lines.join('\n')}
  version     Print the version
  help        Help of a command: ${prog} help exec

Global flags:
  --url URL            gateway URL (env SANDBOX_URL)
  --key KEY            API key (env SANDBOX_KEY; prefer it or the config file: flags show in ps)
  -n, --namespace NS   namespace (env SANDBOX_NAMESPACE; default: the key's)
  -o, --output F       table (default), json, yaml, name
  --config PATH        config file (env SANDBOX_CONFIG; default $XDG_CONFIG_HOME/sbx/config.yaml)

Exit status: exec passes the command's exit code through; otherwise 0 on success, 1 when the
gateway refused or could not be reached, 2 for a bad command line, 130 when interrupted.
`;
}

function commandHelp(prog: string, c: Command): string {
  const aliases = c.aliases?.length ? `\nAliases: ${c.aliases.join(', ')}` : '';
  const flags = c.flagHelp?.length ? `\n\nFlags:\n${c.flagHelp.map((l) => `  ${l}`).join('\n')}` : '';
  return `${c.summary}\n\nUsage: ${prog} ${c.usage}${aliases}${flags}\n\nGlobal flags: see ${prog} help\n`;
}
