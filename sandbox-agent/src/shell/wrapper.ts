/**
 * What the agent writes to the persistent bash: the one-time init, then one frame per command.
 *
 * Input: bash runs the init (SHELL_INIT, given at its start, see BashProcess), and the init ends in
 * a loop that reads all of bash's stdin as frames (8 decimal digits of length, the ASCII script,
 * padding to a 1 KiB block, see FRAME_BLOCK), taken with `read -N` (bash 5.1+ reads those with one
 * read(2) each; bash's parser would read its input one byte per read(2), which under gVisor costs a
 * trip through the Sentry per byte) and run with `eval` in the main shell, so `cd`, `export`,
 * functions and aliases persist. Every frame is ASCII: bytes outside it (and control characters)
 * are spelled as `$'\xHH'` words (see bashWord), so that `read -N`, which counts characters, counts
 * bytes whatever locale a command sets. NUL bytes are dropped, as bash's parser drops them.
 *
 * File descriptors: the loop runs as one compound command with redirections that leave fd 0 on
 * /dev/null and fds 1 and 2 on the stdout and stderr pipes, while bash keeps its own copies of the
 * originals, close-on-exec, above 9: fd 10 the protocol (bash's stdin), 11 stdout and 13 stderr. So
 * no process a command starts inherits the protocol, and a command's `exec 3>file`, `exec 9>lock`
 * or `{var}>` (which takes the lowest free fd from 10 up) cannot touch them; the init checks the
 * numbers (it exits 97 when they are not what it expects). A command that names fd 10, 11 or 13
 * itself can break its own framing.
 *
 * Framing: after the user's command, bash prints a random per-command sentinel followed by `\0<exit
 * status>\0` on stdout, in one write(2) (see status-trailer.ts). Since the sentinel is written
 * after the command's foreground work finished, every byte before it on stdout belongs to the
 * command, and so does everything then waiting in the stderr pipe, which the agent takes at that
 * moment (Execution): one write and one wake-up of the agent per command (each is costly under
 * gVisor), where a marker on each stream made two of each. The sentinel is printed from two halves
 * (`printf %s 'A' 'B'`) so that the full sentinel never appears in the text bash reads: tracing
 * (`set -x`) or echoing (`set -v`) the wrapper cannot produce a false end-of-output; the frame's
 * text is emptied (`__sbx_w=`) before the command runs, so the command cannot read its sentinel
 * there.
 *
 * The command runs through `eval` inside a one-pass `for` loop (a `break` or `continue` of the
 * command ends the command, not the frame loop), with its stdin from /dev/null or its own FIFO (see
 * stdin-pipe.ts). `set -m` puts each job it starts in its own process group, which the timeout kill
 * uses. Per-call env is a temporary assignment prefix (`K='v' eval ...`), so it applies to that
 * call only; a per-call cwd is undone after the call unless the command changed directory itself.
 * After the command, a stdin, stdout or stderr it redirected with `exec` is put back (checked with
 * `test -ef`, which costs two stat calls where a redirection costs seven). Builtins are called as
 * `builtin x` so that user functions named printf, cd, set, test... cannot break the framing;
 * `exec` and `eval` are called through `command` instead, because `builtin exec` drops its
 * redirections when it returns and `K=v builtin eval` does not export K to the processes the
 * command starts. Names starting with `__sbx_` are reserved; a command that redefines them breaks
 * its own framing, and then runs into its deadline and a shell restart.
 *
 * Cost per command of `true` (strace, natively): 14 syscalls in bash, where the line protocol this
 * replaced made 137; see ADR 0026 and docs/benchmarks.md (bench-isolation).
 */
import { SESSION_ENV_PREFIX } from '@sandbox-platform/api';

import { INIT_VARIABLE } from './bash-process.js';

/** Width of a frame's length prefix (decimal digits). */
const FRAME_LENGTH_DIGITS = 8;

/**
 * bash takes the first FRAME_BLOCK bytes of every frame with one `read -N` (five syscalls), and
 * the rest, if any, with a second: a frame is its script's length in 8 digits, the script, and
 * spaces up to FRAME_BLOCK bytes. Nearly every command's frame fits one block.
 */
export const FRAME_BLOCK = 1024;

/** Longest script a frame can carry. */
export const MAX_FRAME_BYTES = 10 ** FRAME_LENGTH_DIGITS - 1;

/**
 * Where bash keeps its close-on-exec copies of the protocol (its stdin), stdout and stderr: the
 * fds its saved copies for the init's compound redirection get (the lowest free from 10, in the
 * order of the redirections; 12 is the saved copy of the temporary fd 4).
 */
const PROTOCOL_FD = 10;
const STDOUT_FD = 11;
const STDERR_FD = 13;

/** Exit status of a bash whose init found its copies elsewhere than PROTOCOL_FD, STDOUT_FD, STDERR_FD. */
export const SHELL_INIT_FD_MISMATCH = 97;

/**
 * Run once after bash starts: define the helpers, then run the frame loop with the channels moved
 * above fd 9 (see above). `__sbx_a` turns tracing back on for the user's command when the user
 * had it on. `__sbx_q N` reads exactly N characters of the protocol into `__sbx_v`, going on after
 * a trapped signal interrupts `read` (status > 128) and failing only at the end of the input;
 * `__sbx_r` reads one frame (one block, and the rest of a longer frame) into `__sbx_w`.
 * `__sbx_z` (called with stderr on /dev/null when tracing is on, so its own tracing is invisible)
 * keeps `$?`, turns tracing off, undoes a per-call cwd the command did not change, puts back
 * stdout, and writes the end of output. Every helper but the readers returns 0 so that a user's
 * `set -e` never fires inside them.
 */
export const SHELL_INIT = [
  `builtin unset ${INIT_VARIABLE}`,
  '__sbx_a() { if builtin test "$__sbx_x" = 1; then builtin set -x; fi; }',
  '__sbx_q() {',
  '  __sbx_v=',
  '  while builtin test "${#__sbx_v}" -lt "$1"; do',
  `    IFS= TMOUT= builtin read -r -u ${PROTOCOL_FD} -N "$(($1 - \${#__sbx_v}))" __sbx_p`,
  '    __sbx_s=$?; __sbx_v+=$__sbx_p; __sbx_p=',
  '    if builtin test "$__sbx_s" -ne 0 && builtin test "$__sbx_s" -le 128; then builtin return 1; fi',
  '  done',
  '}',
  '__sbx_r() {',
  `  __sbx_q ${FRAME_BLOCK} || builtin return 1`,
  `  __sbx_l=$((10#\${__sbx_v:0:${FRAME_LENGTH_DIGITS}})); __sbx_w=\${__sbx_v:${FRAME_LENGTH_DIGITS}:__sbx_l}`,
  `  if builtin test "$__sbx_l" -gt ${FRAME_BLOCK - FRAME_LENGTH_DIGITS}; then`,
  `    __sbx_q "$((__sbx_l - ${FRAME_BLOCK - FRAME_LENGTH_DIGITS}))" || builtin return 1; __sbx_w+=$__sbx_v`,
  '  fi',
  '  __sbx_v=',
  '}',
  '__sbx_z() {',
  '  __sbx_st=$?',
  '  case $- in *x*) __sbx_x=1; builtin set +x;; *) __sbx_x=0;; esac',
  '  if builtin test -n "$__sbx_c" && builtin test "$PWD" = "$__sbx_c"; then builtin cd -- "$__sbx_d" >/dev/null 2>&1 || :; fi',
  `  builtin test /dev/fd/1 -ef /dev/fd/${STDOUT_FD} || command exec 1>&${STDOUT_FD}`,
  String.raw`  builtin printf '%s%s\0%s\0' "$1" "$2" "$__sbx_st"`,
  '}',
  // 6 is a plain copy of the protocol, only to check where bash saved the original; the copies
  // of stdout and stderr are checked against fds 1 and 2 themselves.
  '{ builtin set -m; __sbx_x=0; __sbx_c=',
  `  builtin test /dev/fd/${PROTOCOL_FD} -ef /dev/fd/6 && builtin test /dev/fd/${STDOUT_FD} -ef /dev/fd/1 &&`,
  `    builtin test /dev/fd/${STDERR_FD} -ef /dev/fd/2 || builtin exit ${SHELL_INIT_FD_MISMATCH}`,
  '  command exec 6<&-',
  '  while __sbx_r; do builtin eval "$__sbx_w"; done; builtin exit',
  '} 6<&0 0</dev/null 4>&1 1>&4 4>&- 5>&2 2>&5 5>&-',
  '',
].join('\n');

/** A frame of ASCII script for the init's loop (see FRAME_BLOCK): its length, the script, padding. */
export function frame(script: string): string {
  if (!isFrameText(script)) throw new Error('a frame must be ASCII without NUL');
  if (script.length > MAX_FRAME_BYTES) throw new Error(`a frame is at most ${MAX_FRAME_BYTES} bytes`);
  const head = String(script.length).padStart(FRAME_LENGTH_DIGITS, '0') + script;
  return head.length < FRAME_BLOCK ? head.padEnd(FRAME_BLOCK, ' ') : head;
}

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

/**
 * One bash word for any string: single-quoted when it is ASCII without NUL (as shellQuote), else
 * ANSI-C quoted (`$'...'`) with every byte outside printable ASCII as `\xHH` of its UTF-8
 * encoding, so the word itself is ASCII. NUL bytes are dropped (bash's parser drops them too; a
 * bash string cannot hold one).
 */
export function bashWord(value: string): string {
  if (isFrameText(value)) return shellQuote(value);
  let out = "$'";
  for (const byte of Buffer.from(value, 'utf8')) {
    if (byte === 0) continue;
    if (byte === 0x27 || byte === 0x5c) out += `\\${String.fromCharCode(byte)}`;
    else if (byte >= 0x20 && byte < 0x7f) out += String.fromCharCode(byte);
    else out += `\\x${byte.toString(16).padStart(2, '0')}`;
  }
  return `${out}'`;
}

/** Whether `text` may go into a frame as it is: ASCII without NUL. */
function isFrameText(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0 || c > 0x7f) return false;
  }
  return true;
}

/** The two halves of a sentinel; the sentinel on the wire is `head + tail`. */
export interface SentinelHalves {
  head: string;
  tail: string;
}

/** Builds the frame that runs `cmd` framed by `sentinel`. */
export function buildWrapper(cmd: ShellCommand, sentinel: SentinelHalves): string {
  const assignments = Object.entries(cmd.env ?? {}).map(([name, value]) => {
    if (!ENV_NAME.test(name)) throw new Error(`invalid variable name: ${name}`);
    return `${name}=${bashWord(value ?? '')} `;
  });
  const stdin = cmd.stdinPath === undefined ? '' : ` <${bashWord(cmd.stdinPath)}`;
  const call = `${assignments.join('')}command eval ${bashWord(cmd.command)}${stdin}`;
  const run = `for __sbx_o in 1; do __sbx_a; ${call}; done`;
  const body =
    cmd.cwd === undefined
      ? run
      : `__sbx_d=$PWD; if builtin cd -- ${bashWord(cmd.cwd)} >/dev/null; then __sbx_c=$PWD; ${run}; else false; fi`;
  const halves = `${shellQuote(sentinel.head)} ${shellQuote(sentinel.tail)}`;
  // `__sbx_z` runs with stderr on /dev/null only when tracing is on (its own trace would show
  // otherwise; a traced command shows a `+ case $- in` line instead), since the redirection
  // costs ten syscalls. stderr is put back last: inside `{ } 2>/dev/null` fd 2 is /dev/null, and
  // afterwards it is what the command left (an `exec 2>file` lasts past the command otherwise).
  // stdin too is put back after the end of output: the agent need not wait for it.
  return frame(
    `__sbx_w=; __sbx_c=; ${body}; ` +
      `case $- in *x*) { __sbx_z ${halves}; } 2>/dev/null;; *) __sbx_z ${halves};; esac; ` +
      `builtin test /dev/fd/2 -ef /dev/fd/${STDERR_FD} || command exec 2>&${STDERR_FD}; ` +
      `builtin test /dev/fd/0 -ef /dev/null || command exec 0</dev/null\n`,
  );
}
