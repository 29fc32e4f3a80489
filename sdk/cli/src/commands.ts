/** The command table: names, flags and help of every command (cli.ts dispatches on it). */
import type { ParseArgsConfig } from 'node:util';

import { run, watchCommand } from './commands/code.js';
import { completionCommand } from './commands/completion.js';
import { config } from './commands/config.js';
import { cp } from './commands/cp.js';
import { exec } from './commands/exec.js';
import { create, get, remove, resume, suspend, wait } from './commands/sessions.js';
import { shell } from './commands/shell.js';
import { fork, snapshot } from './commands/snapshots.js';
import { audit, egress } from './commands/egress.js';
import type { Context } from './io.js';

type Options = NonNullable<ParseArgsConfig['options']>;

/** One command. */
export interface Command {
  name: string;
  aliases?: string[];
  usage: string;
  summary: string;
  flags: Options;
  /** Help lines of the flags, in order. */
  flagHelp?: string[];
  run(ctx: Context): Promise<number>;
}

/** Flags every command takes. */
export const GLOBAL_FLAGS: Options = {
  url: { type: 'string' },
  key: { type: 'string' },
  namespace: { type: 'string', short: 'n' },
  output: { type: 'string', short: 'o' },
  config: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
};

const timeout = { type: 'string' } as const;
const env = { type: 'string', short: 'e', multiple: true } as const;

/** Every command, in help order. `version` and `help` are handled by cli.ts. */
export const COMMANDS: Command[] = [
  {
    name: 'create',
    usage:
      'create [NAME] [--image I] [--env K=V]... [--idle-timeout 30m] [--max-lifetime 8h] [--persistent-workspace] [--pool P] [--wait]',
    summary: 'Create a session, or get it when one of that name exists',
    flags: {
      image: { type: 'string' },
      env,
      'idle-timeout': timeout,
      'max-lifetime': timeout,
      transport: { type: 'string' },
      'shutdown-policy': { type: 'string' },
      'persistent-workspace': { type: 'boolean' },
      pool: { type: 'string' },
      wait: { type: 'boolean' },
      timeout,
    },
    flagHelp: [
      '--image I             sandbox image (must be on the gateway allowlist)',
      '-e, --env K=V         environment variable of the sandbox (repeatable)',
      '--idle-timeout D      idle time before the session is collected (e.g. 30m)',
      '--max-lifetime D      lifetime of the session (e.g. 8h)',
      '--transport T         Agent (default) or KubernetesExec',
      '--shutdown-policy P   Delete (default), Retain, or Suspend (suspend when idle; needs --persistent-workspace)',
      '--persistent-workspace  keep /workspace (= HOME) on a PersistentVolumeClaim: it survives suspension',
      '--pool P              bind a running Pod of the SandboxPool P (warm start; cold from its template when none is free)',
      '--wait                wait until it is Ready (up to --timeout, default 120s)',
    ],
    run: create,
  },
  {
    name: 'get',
    aliases: ['list', 'ls'],
    usage: 'get [NAME...]',
    summary: 'Show sessions (all of the namespace without NAME)',
    flags: {},
    run: get,
  },
  {
    name: 'delete',
    aliases: ['rm'],
    usage: 'delete NAME...',
    summary: 'Delete sessions',
    flags: {},
    run: remove,
  },
  {
    name: 'suspend',
    usage: 'suspend NAME...',
    summary: 'Suspend sessions: the Pod goes, the workspace and token stay (the next exec resumes)',
    flags: {},
    run: suspend,
  },
  {
    name: 'resume',
    usage: 'resume NAME... [--wait 30s]',
    summary: 'Resume suspended sessions (exec and cp resume them too)',
    flags: { wait: { type: 'string' } },
    flagHelp: ['--wait D      answer once the session is Ready, waiting up to D (default: at once)'],
    run: resume,
  },
  {
    name: 'fork',
    usage: 'fork NAME [--count N] [--name F]... [--wait] [--timeout 300s]',
    summary: 'Fork a session: snapshot its /workspace and start N sessions from it (each verified)',
    flags: {
      count: { type: 'string', short: 'c' },
      name: { type: 'string', multiple: true },
      wait: { type: 'boolean' },
      timeout,
    },
    flagHelp: [
      '-c, --count N   sessions to start (1..10; default 1, or the number of --name)',
      '--name F        name of a new session (repeatable; generated otherwise)',
      '--wait          wait until every new session is Ready (its copy verified; up to --timeout, default 300s)',
    ],
    run: fork,
  },
  {
    name: 'snapshot',
    aliases: ['snapshots'],
    usage: 'snapshot create SESSION [--name S] [--wait] | get [NAME...] | list | delete NAME... | wait NAME',
    summary: "Save a session's /workspace (with a content digest), list and delete snapshots",
    flags: { name: { type: 'string' }, wait: { type: 'boolean' }, timeout },
    flagHelp: [
      '--name S      snapshot name (create; generated otherwise)',
      '--wait        create: wait until it is Ready (up to --timeout, default 300s)',
    ],
    run: snapshot,
  },
  {
    name: 'egress',
    usage: 'egress get NAME | egress set NAME --allow HOST[:PORT,...]... [--no-defaults]',
    summary: "Show or replace a session's egress rules (hosts it may reach through the egress proxy)",
    flags: { allow: { type: 'string', multiple: true }, 'no-defaults': { type: 'boolean' } },
    flagHelp: [
      '--allow H[:P,..] allow host H (a name or *.suffix) on ports P (default 80,443); repeatable',
      "--no-defaults    do not also allow the namespace's default rules",
    ],
    run: egress,
  },
  {
    name: 'audit',
    usage: 'audit NAME [--after N] [--limit N] | audit verify NAME',
    summary: "List a session's audit records, or verify their hash chain (exit 1 when broken)",
    flags: { after: { type: 'string' }, limit: { type: 'string' } },
    flagHelp: [
      '--after N     records with seq > N (default 0)',
      '--limit N     at most N records (1..1000, default 100)',
    ],
    run: audit,
  },
  {
    name: 'exec',
    usage: 'exec NAME [--timeout 60s] [--cwd DIR] [--env K=V]... [--wait 30s] -- CMD [ARG...]',
    summary: 'Run a command in a session, stream its output, exit with its exit code',
    flags: { timeout, cwd: { type: 'string' }, env, wait: { type: 'string' } },
    flagHelp: [
      '--timeout D   kill the command after D (gateway default 60s, at most 300s)',
      '--cwd DIR     working directory (relative to /workspace)',
      '-e, --env K=V environment variable of this command (repeatable)',
      '--wait D      wait up to D for a session that is not Ready yet',
      'One CMD word is a bash command line as is; several are quoted word by word.',
    ],
    run: exec,
  },
  {
    name: 'run',
    usage: 'run NAME [--context C] [--timeout 60s] [--out-dir DIR] (--file F | - | -- CODE...)',
    summary:
      'Run Python in a code context of a session (a Jupyter kernel: variables persist), print its results',
    flags: {
      context: { type: 'string' },
      timeout,
      file: { type: 'string', short: 'f' },
      'out-dir': { type: 'string' },
      wait: { type: 'string' },
    },
    flagHelp: [
      '--context C   context name (default "default"); each has its own variables',
      '--timeout D   interrupt the code after D (default 60s, at most 300s); the context stays usable',
      '-f, --file F  read the code from a file (- reads stdin; or give it after --)',
      '--out-dir DIR save images (charts) there as output-N.png',
      '--wait D      wait up to D for a session that is not Ready yet',
      'Exit status: 0 ok, 1 an exception (traceback on stderr), 124 timeout, 130 interrupted, 137 kernel died.',
      'The session needs an image with a Python kernel, e.g. localhost/sandbox-platform/sandbox-python:dev.',
    ],
    run,
  },
  {
    name: 'watch',
    usage: 'watch NAME [PATH] [-r] [--timeout 300s]',
    summary: 'Print changes under a workspace directory of a session as JSON lines',
    flags: { recursive: { type: 'boolean', short: 'r' }, timeout },
    flagHelp: [
      '-r, --recursive  watch subdirectories too',
      '--timeout D      end after D (default 300s, at most 1h)',
    ],
    run: watchCommand,
  },
  {
    name: 'cp',
    usage: 'cp SRC DST   (one side NAME:PATH in /workspace, the other a local path or -)',
    summary: 'Copy a file to or from a session, byte for byte',
    flags: {},
    run: cp,
  },
  {
    name: 'wait',
    usage: 'wait NAME [--timeout 120s]',
    summary: 'Wait until a session is Ready',
    flags: { timeout },
    run: wait,
  },
  {
    name: 'shell',
    usage: 'shell NAME',
    summary: 'Interactive shell (bash -i on a terminal) in a session; exits with its status',
    flags: {},
    run: shell,
  },
  {
    name: 'config',
    usage: 'config view | path | set KEY VALUE   (KEY: url, key, namespace, output; VALUE - reads stdin)',
    summary: 'Show or change the config file',
    flags: {},
    run: config,
  },
  {
    name: 'completion',
    usage: 'completion bash|zsh   (e.g. source <(sbx completion bash))',
    summary: 'Print a shell completion script',
    flags: {},
    run: (ctx) => completion(ctx),
  },
];

/** Commands whose positionals are session names (for completion). */
export const SESSION_COMMANDS = [
  'get',
  'list',
  'ls',
  'delete',
  'rm',
  'suspend',
  'resume',
  'fork',
  'exec',
  'run',
  'watch',
  'wait',
  'shell',
];

const completion = completionCommand({
  commands: [...COMMANDS.flatMap((c) => [c.name, ...(c.aliases ?? [])]), 'version', 'help'],
  sessionCommands: SESSION_COMMANDS,
  globalFlags: ['--url', '--key', '--namespace', '--output', '--config', '--help'],
});

/** The command of a name or alias. */
export function findCommand(name: string): Command | undefined {
  return COMMANDS.find((c) => c.name === name || c.aliases?.includes(name));
}
