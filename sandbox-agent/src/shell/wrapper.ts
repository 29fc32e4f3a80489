/**
 * The text written to the persistent bash for each command, and the one-time init.
 *
 * Framing: after the user's command, bash prints a random per-command sentinel on stdout and on
 * stderr, and a control record `<sentinel>\0<status>\0<cwd>\0` on fd 3 (a pipe only the agent
 * reads). Since the sentinel is written after the command's foreground work finished, every byte
 * before it on a stream belongs to the command. The sentinel is printed from two halves
 * (`printf %s 'A' 'B'`) so that the full sentinel never appears in the text bash reads: tracing
 * (`set -x`) or echoing (`set -v`) the wrapper cannot produce a false end-of-output.
 *
 * The user's command runs through `eval` in the main shell (so `cd`, `export`, functions and
 * aliases persist), with stdin from /dev/null or its own FIFO (it cannot read the protocol, which
 * is bash's stdin; see stdin-pipe.ts) and fds 3, 8 and 9 closed (it cannot write the control
 * channel or the saved stdout/stderr). `set -m` puts each job
 * it starts in its own process group, which the timeout kill uses. Per-call env is a temporary
 * assignment prefix (`K='v' eval ...`), so it applies to that call only; a per-call cwd is undone
 * after the call unless the command changed directory itself.
 *
 * bash reads its input one byte at a time from a pipe or socket (so that commands reading stdin
 * would see the right position): one read(2) per byte of the per-command text, about a third of a
 * microsecond each natively but 15-25 us under gVisor, where every syscall is a trip through the
 * Sentry (a 160-byte wrapper cost more than its command). The fixed parts live in two functions
 * defined once (`__sbx_a` before, `__sbx_z` after the command), and an ASCII-only wrapper (nearly
 * every command) is not parsed from the protocol at all: bash reads a short line,
 * `__sbx_r N; builtin eval "$__sbx_w"`, and `__sbx_r` takes the N bytes of the wrapper that follow
 * with `read -N`, which bash 5.1+ does in large read(2)s (it never reads past N, so the protocol
 * stays in step); the wrapper then runs through `eval` in the main shell exactly as if bash had
 * read it, and first empties `__sbx_w` so the command cannot read its own sentinel there. `read
 * -N` counts characters, hence ASCII only (one byte each in every locale); a wrapper with any
 * other byte, NUL included, is written as a line as before. `TMOUT=` keeps a user's TMOUT from
 * timing the read out. Builtins are called as
 * `builtin x` so that user functions named printf, cd, set... cannot break the framing; `exec`
 * and `eval` are called through `command` instead, because `builtin exec` drops its redirections
 * when it returns and `K=v builtin eval` does not export K to the processes the command starts. Names
 * starting with `__sbx_` are reserved; a command that redefines them breaks its own framing, and
 * then runs into its deadline and a shell restart.
 */
import { SESSION_ENV_PREFIX } from '@sandbox-platform/api';

/**
 * Run once after bash starts: save stdout/stderr on fds 8/9, enable job control, define the
 * helpers. `__sbx_a` turns tracing back on for the user's command when the user had it on.
 * `__sbx_z` (called with stderr on /dev/null, so its own tracing is invisible) keeps `$?`, turns
 * tracing off, undoes a per-call cwd the command did not change, and writes the three markers.
 * `__sbx_r` reads the wrapper that follows its line (see above). Every helper but `__sbx_r` (whose
 * read fails only at the end of the protocol) returns 0 so that a user's `set -e` never fires inside them.
 */
export const SHELL_INIT = [
  'command exec 8>&1 9>&2; builtin set -m; __sbx_x=0; __sbx_c=',
  '__sbx_a() { if builtin test "$__sbx_x" = 1; then builtin set -x; fi; }',
  '__sbx_r() { IFS= TMOUT= builtin read -r -N "$1" __sbx_w; }',
  '__sbx_z() {',
  '  __sbx_st=$?',
  '  case $- in *x*) __sbx_x=1; builtin set +x;; *) __sbx_x=0;; esac',
  '  if builtin test -n "$__sbx_c" && builtin test "$PWD" = "$__sbx_c"; then builtin cd -- "$__sbx_d" >/dev/null 2>&1 || :; fi',
  '  builtin printf %s "$1" "$2" >&8; builtin printf %s "$1" "$2" >&9',
  String.raw`  builtin printf '%s%s\0%s\0%s\0' "$1" "$2" "$__sbx_st" "$PWD" >&3`,
  '}',
  '',
].join('\n');

/**
 * Run once after SHELL_INIT: exports the session's env (spec.env) under its own names. bash starts
 * with each value in `<SESSION_ENV_PREFIX><name>` (nothing interprets those) and copies it here,
 * so LD_PRELOAD, BASH_ENV, NODE_OPTIONS and the like reach every process the user's commands
 * start but neither the agent nor this bash's own start (a BASH_ENV script sourced before
 * SHELL_INIT could read the protocol from stdin or close its fds; SHELLOPTS would set options).
 * Names bash holds readonly (SHELLOPTS, EUID, PPID...) are refused by `export` and not applied;
 * `command export` keeps that from ending the shell even in POSIX mode, its error goes to /dev/null.
 */
export function sessionEnvInit(names: readonly string[]): string {
  return names
    .map((name) => {
      if (!ENV_NAME.test(name)) throw new Error(`invalid variable name: ${name}`);
      const carrier = SESSION_ENV_PREFIX + name;
      return `command export ${name}="$${carrier}" 2>/dev/null; builtin unset ${carrier}\n`;
    })
    .join('');
}

/** A command as the shell runs it. */
export interface ShellCommand {
  /** bash source, run with eval. */
  command: string;
  /** Directory for this call only (relative to the shell's current directory, or absolute). */
  cwd?: string;
  /** Variables for this call only. Names must match {@link ENV_NAME}. */
  env?: Readonly<Record<string, string | undefined>>;
  /** A FIFO to read stdin from (default /dev/null). */
  stdinPath?: string;
}

/** Valid variable names; validated before a name reaches the shell unquoted. */
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Single-quotes a string for bash: everything is literal except `'`, spelled `'\''`. */
export function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

/** The two halves of a sentinel; the sentinel on the wire is `head + tail`. */
export interface SentinelHalves {
  head: string;
  tail: string;
}

/** Builds the one-line script that runs `cmd` framed by `sentinel`. */
export function buildWrapper(cmd: ShellCommand, sentinel: SentinelHalves): string {
  const assignments = Object.entries(cmd.env ?? {}).map(([name, value]) => {
    if (!ENV_NAME.test(name)) throw new Error(`invalid variable name: ${name}`);
    return `${name}=${shellQuote(value ?? '')} `;
  });
  const stdin = cmd.stdinPath === undefined ? '/dev/null' : shellQuote(cmd.stdinPath);
  const run = `__sbx_a; ${assignments.join('')}command eval ${shellQuote(cmd.command)} <${stdin} 3>&- 8>&- 9>&-`;
  const body =
    cmd.cwd === undefined
      ? run
      : `__sbx_d=$PWD; if builtin cd -- ${shellQuote(cmd.cwd)} >/dev/null; then __sbx_c=$PWD; ${run}; else false; fi`;
  const halves = `${shellQuote(sentinel.head)} ${shellQuote(sentinel.tail)}`;
  // Restoring stdout/stderr last: a command's `exec >file` must not outlive it (an `exec` inside
  // the eval drops the eval's own saved fds, so a 1>&1 on the eval would not undo it).
  const line = `__sbx_c=; ${body}; { __sbx_z ${halves}; } 2>/dev/null; command exec 1>&8 2>&9\n`;
  if (!asciiOnly(line)) return line;
  const wrapped = `__sbx_w=; ${line}`;
  return `__sbx_r ${wrapped.length}; builtin eval "$__sbx_w"\n${wrapped}`;
}

/** Whether `read -N` counts `text` byte for byte in any locale: ASCII without NUL. */
function asciiOnly(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0 || c > 0x7f) return false;
  }
  return true;
}
