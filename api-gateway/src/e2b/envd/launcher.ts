/**
 * The command text of an E2B process, run by the sandbox agent as a background process (ADR 0018;
 * docs/adr for this mapping: docs/e2b.md). Pure: text in, text out.
 *
 * E2B's envd starts a process from `cmd` + `args` (the SDKs send `/bin/bash -l -c <command>` for
 * commands and `/bin/bash -i -l` for terminals) with its own stdin, signals, terminal resizes and
 * input arriving later, on separate calls that may reach another gateway replica. So everything a
 * later call needs lives in the sandbox, not in a gateway's memory:
 *
 * - the first line is a marker, `# e2b1 <io> <base64url JSON>`, that the process list repeats
 *   (the agent shows a process's command): `io` names the process's FIFO directory
 *   `/tmp/.e2b-<io>` (or `-` when it has none), the JSON its cmd, args, cwd and tag for List. The
 *   io part comes first: it survives when the agent shortens a long command in its list;
 * - a process with stdin reads a FIFO (`in`) that a keeper process holds open for writing, so the
 *   process sees end of input only when CloseStdin kills the keeper (its pid is in `keeper`);
 * - a terminal runs under the agent's PTY helper (the one GET /v1/pty uses), reading terminal
 *   input from `in` and resize lines ("COLS ROWS") from `ctl`, both FIFOs it opens read-write so
 *   writers may come and go.
 *
 * Input, close and resize are then short commands the gateway runs in the sandbox (inputScript,
 * closeStdinScript, resizeScript). Everything from the sandbox (a forged marker in a process list
 * included) is checked before use: the io token must be 32 hex digits, the paths are built here.
 */
import { randomBytes } from 'node:crypto';

import { ProblemError } from '../../errors.js';

/** The agent's PTY helper (sandbox-agent: `sandbox-pty COLS ROWS -- PROGRAM [ARG...]`). */
export const PTY_HELPER = '/opt/sandbox-agent/sandbox-pty';
/** Marker tag of the first line; a new layout gets a new tag. */
export const MARKER = 'e2b1';
/** Largest terminal side (the agent's terminal route takes the same range). */
export const MAX_PTY_SIDE = 1000;

const IO_TOKEN = /^[0-9a-f]{32}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const MARKER_LINE = /^# e2b1 ([0-9a-f]{32}|-) ([A-Za-z0-9_-]*)/;

/**
 * Where a sandbox keeps its login environment (see loginCommandLines): in /tmp, so every gateway
 * replica's launchers find it and a new Pod (resume) starts without it.
 */
export const LOGIN_ENV_FILE = '/tmp/.e2b-login-env-1';

/**
 * Files whose change makes the kept login environment stale: bash's login files and what Debian's
 * /etc/profile reads. A tool installer that adds a line to ~/.profile is seen by the next command.
 */
const LOGIN_FILES = [
  '/etc/profile',
  '/etc/profile.d',
  '/etc/profile.d/*.sh',
  '/etc/bash.bashrc',
  '~/.bash_profile',
  '~/.bash_login',
  '~/.profile',
  '~/.bashrc',
];

/** A process as E2B's Start describes it. */
export interface LaunchSpec {
  cmd: string;
  args: string[];
  /** The request's envs (the agent exports them too; the login fast path applies them again last). */
  env?: Record<string, string>;
  cwd?: string;
  tag?: string;
  /** Start a terminal of that size. */
  pty?: { cols: number; rows: number };
  /** Give the process a stdin the caller writes to (ignored with a terminal: input goes there). */
  stdin: boolean;
}

/** What the marker of a process says. */
export interface Marker {
  /** The FIFO directory's token, when the process has one. */
  io?: string;
  cmd?: string;
  args?: string[];
  cwd?: string;
  tag?: string;
  pty?: boolean;
  stdin?: boolean;
  /** A directory watcher of the filesystem service (not listed as a process). */
  watch?: boolean;
}

/** One bash word for any string without NUL (single-quoted). */
export function shellWord(value: string): string {
  if (value.includes('\0')) throw new ProblemError('invalid-request', 'arguments cannot contain NUL bytes');
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

/** Checks env names up front (the agent refuses bad ones too, with a less helpful message). */
export function checkEnvs(envs: Record<string, string>): void {
  for (const [name, value] of Object.entries(envs)) {
    if (!ENV_NAME.test(name)) {
      throw new ProblemError('invalid-request', `invalid environment variable name ${JSON.stringify(name)}`);
    }
    if (value.includes('\0')) throw new ProblemError('invalid-request', `env ${name} contains a NUL byte`);
  }
}

/** The FIFO directory of an io token. */
export function ioDir(io: string): string {
  if (!IO_TOKEN.test(io)) throw new Error('invalid io token');
  return `/tmp/.e2b-${io}`;
}

function checkPty(pty: { cols: number; rows: number }): void {
  const ok = (n: number): boolean => Number.isInteger(n) && n >= 1 && n <= MAX_PTY_SIDE;
  if (!ok(pty.cols) || !ok(pty.rows)) {
    throw new ProblemError('invalid-request', `pty size must be 1..${MAX_PTY_SIDE} columns and rows`);
  }
}

/** The first line of a launcher: `# e2b1 <io|-> <base64url JSON>`. */
export function markerLine(json: Marker, io: string | undefined): string {
  const { io: _io, ...rest } = json;
  return `# ${MARKER} ${io ?? '-'} ${Buffer.from(JSON.stringify(rest)).toString('base64url')}`;
}

function processMarker(spec: LaunchSpec, io: string | undefined): string {
  const json: Marker = { cmd: spec.cmd, args: spec.args };
  if (spec.cwd !== undefined) json.cwd = spec.cwd;
  if (spec.tag !== undefined) json.tag = spec.tag;
  if (spec.pty) json.pty = true;
  if (io !== undefined && !spec.pty) json.stdin = true;
  return markerLine(json, io);
}

/**
 * The command text for the agent (with a fresh io token when the process needs FIFOs). Exits 125
 * when its FIFOs cannot be made; otherwise the process replaces the script (`exec`), so its pid is
 * the agent's process pid and its exit status is the process's.
 */
export function launcherScript(
  spec: LaunchSpec,
  token: () => string = newIoToken,
  ptyHelper: string = PTY_HELPER,
  loginEnvFile: string = LOGIN_ENV_FILE,
): string {
  if (spec.cmd.length === 0) throw new ProblemError('invalid-request', 'process cmd is empty');
  const words = [spec.cmd, ...spec.args].map(shellWord).join(' ');
  if (spec.pty) {
    checkPty(spec.pty);
    const io = token();
    const d = ioDir(io);
    return [
      processMarker(spec, io),
      `d=${d}`,
      'mkdir -m 700 "$d" && mkfifo "$d/in" "$d/ctl" || exit 125',
      `exec ${shellWord(ptyHelper)} ${spec.pty.cols} ${spec.pty.rows} -- ${words} 0<>"$d/in" 3<>"$d/ctl" 4>/dev/null 2>/dev/null`,
    ].join('\n');
  }
  const login = loginCommand(spec);
  if (spec.stdin) {
    const io = token();
    const d = ioDir(io);
    return [
      processMarker(spec, io),
      `d=${d}`,
      'mkdir -m 700 "$d" && mkfifo "$d/in" || exit 125',
      'sleep infinity >"$d/in" 2>/dev/null </dev/null &',
      'echo $! >"$d/keeper"',
      ...(login === undefined
        ? [`exec ${words} <"$d/in"`]
        : ['exec <"$d/in"', 'unset -v d', ...loginCommandLines(spec, login, loginEnvFile)]),
    ].join('\n');
  }
  if (login !== undefined) {
    return [processMarker(spec, undefined), ...loginCommandLines(spec, login, loginEnvFile)].join('\n');
  }
  return `${processMarker(spec, undefined)}\nexec ${words}`;
}

/** The command of the SDKs' `commands.run` form, `/bin/bash -l -c <command>`; else undefined. */
export function loginCommand(spec: Pick<LaunchSpec, 'cmd' | 'args'>): string | undefined {
  const [l, c, command, ...rest] = spec.args;
  return spec.cmd === '/bin/bash' && l === '-l' && c === '-c' && command !== undefined && rest.length === 0
    ? command
    : undefined;
}

/**
 * `/bin/bash -l -c <command>` without a login shell per command (ADR 0035, "Commands without a
 * login shell each"): the launcher's own bash (the agent's process, so the pid, signals and exit
 * status are the process's) applies the login environment kept in `file`, the request's envs
 * again (they win over the profile's), sources BASH_ENV as `bash -c` does, and evals the command.
 *
 * The environment is what a login shell's profile files export on top of what the process starts
 * with, taken once by a real `/bin/bash -l` (with the request's envs and BASH_ENV unset, so
 * neither is kept for later commands) and taken again when a login file is newer than it. Only
 * exported variables survive: the profile's functions, aliases, shell options and unexported
 * variables do not (aliases never reached `bash -l -c` either), nor its other effects (output,
 * umask, ulimit). When it cannot be taken (no compgen, an unwritable /tmp), the command runs in a
 * real login shell as before.
 */
function loginCommandLines(spec: LaunchSpec, command: string, file: string): string[] {
  const envNames = Object.keys(spec.env ?? {});
  const unset = ['BASH_ENV', ...envNames].join(' ');
  const printEnv = 'for n in $(compgen -e); do printf "%s=%s\\0" "$n" "${!n}"; done';
  const fresh = LOGIN_FILES.map((f) => (f.startsWith('~/') ? `"$HOME"/${shellWord(f.slice(2))}` : f)).join(
    ' ',
  );
  const exports = Object.entries(spec.env ?? {}).map(([name, value]) => `export ${name}=${shellWord(value)}`);
  return [
    `__e2b_f=${shellWord(file)}`,
    '__e2b_fresh() {',
    `  local x; for x in ${fresh}; do [ -e "$x" ] && ! [ "$__e2b_f" -nt "$x" ] && return 1; done; return 0`,
    '}',
    '__e2b_login() {',
    '  local t="$__e2b_f.$$.$RANDOM"',
    '  (',
    `    unset -v ${unset}`,
    '    declare -A b; for n in $(compgen -e); do b[$n]=${!n}; done',
    '    while IFS= read -r -d "" kv; do',
    '      n=${kv%%=*}',
    '      case $n in SHLVL | _ | PWD | OLDPWD) continue ;; esac',
    '      [[ $n =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || continue',
    '      [[ ${b[$n]+x} && ${b[$n]} == "${kv#*=}" ]] && continue',
    `      printf 'export %s=%q\\n' "$n" "\${kv#*=}"`,
    `    done < <(exec /bin/bash -l -c ${shellWord(printEnv)} </dev/null 2>/dev/null)`,
    '    wait $!',
    '  ) >"$t" 2>/dev/null && mv -f "$t" "$__e2b_f" 2>/dev/null || { rm -f "$t"; return 1; }',
    '}',
    'if { [ -r "$__e2b_f" ] && __e2b_fresh; } || __e2b_login; then',
    '  . "$__e2b_f"',
    ...exports.map((line) => `  ${line}`),
    '  unset -v __e2b_f; unset -f __e2b_fresh __e2b_login',
    '  if [ -n "${BASH_ENV-}" ]; then . "$BASH_ENV"; fi',
    `  eval ${shellWord(command)}`,
    'else',
    `  exec /bin/bash -l -c ${shellWord(command)}`,
    'fi',
  ];
}

/** A random io token. */
export function newIoToken(): string {
  return randomBytes(16).toString('hex');
}

/** The marker of a process's command text, when it has one (fields of a cut JSON are left out). */
export function parseMarker(command: string): Marker | undefined {
  const m = MARKER_LINE.exec(command);
  if (!m) return undefined;
  const marker: Marker = m[1] === '-' ? {} : { io: m[1]! };
  try {
    const json: unknown = JSON.parse(Buffer.from(m[2]!, 'base64url').toString('utf8'));
    if (typeof json === 'object' && json !== null) Object.assign(marker, pickMarker(json));
  } catch {
    // Cut by the agent's list (a long command) or forged: the io part alone still counts.
  }
  return marker;
}

function pickMarker(json: object): Marker {
  const j = json as Record<string, unknown>;
  const out: Marker = {};
  if (typeof j.cmd === 'string') out.cmd = j.cmd;
  if (Array.isArray(j.args) && j.args.every((a) => typeof a === 'string')) out.args = j.args;
  if (typeof j.cwd === 'string') out.cwd = j.cwd;
  if (typeof j.tag === 'string') out.tag = j.tag;
  if (j.pty === true) out.pty = true;
  if (j.stdin === true) out.stdin = true;
  if (j.watch === true) out.watch = true;
  return out;
}

/** Exit status of an input, close or resize script whose process never made its FIFOs. */
export const EXIT_NOT_READY = 3;

/**
 * Waits (at most 5 s) until `test` holds for `file`: a call may come right after the start event,
 * before the launcher has made its FIFOs. Never creates the file itself (a write to a path that is
 * not a FIFO yet would make a regular file there and break the launcher's mkfifo).
 */
function awaitFile(test: '-p' | '-f', file: string): string {
  return `i=0; while [ ! ${test} ${file} ]; do i=$((i+1)); [ $i -gt 50 ] && exit ${EXIT_NOT_READY}; sleep 0.1; done`;
}

/** Writes the command's stdin (the caller passes the bytes as the exec's stdin) into the FIFO. */
export function inputScript(io: string): string {
  const f = `${ioDir(io)}/in`;
  return `${awaitFile('-p', f)}\nexec cat >${f}`;
}

/** Ends the process's stdin: the keeper, the last writer, goes. */
export function closeStdinScript(io: string): string {
  const f = `${ioDir(io)}/keeper`;
  return `${awaitFile('-f', f)}\nk=$(cat ${f}) && kill "$k" 2>/dev/null; exit 0`;
}

/** Resizes a terminal. */
export function resizeScript(io: string, cols: number, rows: number): string {
  checkPty({ cols, rows });
  const f = `${ioDir(io)}/ctl`;
  return `${awaitFile('-p', f)}\nprintf '%s %s\\n' ${cols} ${rows} >${f}`;
}

/** Removes a process's FIFO directory (after the process was removed). */
export function cleanupScript(io: string): string {
  return `rm -rf ${ioDir(io)}`;
}
