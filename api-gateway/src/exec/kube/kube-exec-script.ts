/**
 * Commands the KubernetesExec transport runs through pods/exec. Pods/exec takes an argv, not a
 * shell line, so every user-supplied value travels as a positional argument of a fixed `sh -c`
 * script, never spliced into it: no quoting bugs, no injection through cwd, env or paths.
 */
import { WORKSPACE_DIR } from '@sandbox-platform/api';

import type { ExecRequest } from '../types.js';

/** Seconds between the TERM at the command timeout and the KILL of `timeout -k`. */
export const KILL_AFTER_SECONDS = 2;

/** Exit code of the file scripts when the path leaves the workspace. */
export const EXIT_PATH_FORBIDDEN = 90;
/** Exit code of the file scripts when the file does not exist or is no regular file. */
export const EXIT_NOT_FOUND = 91;

/**
 * Runs the command like the agent does: in the workspace (or cwd, relative to it), with env
 * exported, under bash when the image has it (else sh), and under GNU timeout when the image has
 * it (exit 124 on timeout, like the agent); without `timeout` the gateway's deadline closes the
 * socket. There is no persistent shell: each call starts fresh (no shell state between calls).
 */
const EXEC_SCRIPT = `ws=$1; cwd=$2; t=$3; cmd=$4; shift 4
cd "$ws" 2>/dev/null || true
if [ -n "$cwd" ]; then cd -- "$cwd" || exit 1; fi
for kv in "$@"; do export "$kv"; done
if command -v bash >/dev/null 2>&1; then sh_=bash; else sh_=sh; fi
if command -v timeout >/dev/null 2>&1; then exec timeout -k ${KILL_AFTER_SECONDS} "$t" "$sh_" -c "$cmd"; fi
exec "$sh_" -c "$cmd"`;

/** argv of an exec. */
export function execArgv(req: ExecRequest, workspace = WORKSPACE_DIR): string[] {
  const env = Object.entries(req.env ?? {}).map(([k, v]) => `${k}=${v}`);
  return [
    'sh',
    '-c',
    EXEC_SCRIPT,
    'sandbox-exec',
    workspace,
    req.cwd ?? '',
    String(req.timeoutSeconds),
    req.command,
    ...env,
  ];
}

/** Resolves $2 inside the workspace $1 (following symlinks) or exits EXIT_PATH_FORBIDDEN. */
const RESOLVE = `ws=$(realpath -- "$1") || exit 1
p=$(realpath -m -- "$ws/$2") || exit ${EXIT_PATH_FORBIDDEN}
case "$p" in "$ws"/*) ;; *) exit ${EXIT_PATH_FORBIDDEN} ;; esac`;

/** argv that writes the file's bytes to stdout. */
export function readFileArgv(path: string, workspace = WORKSPACE_DIR): string[] {
  const script = `${RESOLVE}
[ -f "$p" ] || exit ${EXIT_NOT_FOUND}
exec cat -- "$p"`;
  return ['sh', '-c', script, 'sandbox-read', workspace, path];
}

/**
 * argv that stores stdin as the file: written to a temp file in the same directory, then renamed,
 * so a reader never sees half a file (the agent's rule); prints the size.
 */
export function writeFileArgv(path: string, workspace = WORKSPACE_DIR): string[] {
  const script = `${RESOLVE}
mkdir -p -- "$(dirname -- "$p")" || exit 1
tmp="$p.sandbox-upload.$$"
cat > "$tmp" || { rm -f -- "$tmp"; exit 1; }
mv -f -- "$tmp" "$p" || { rm -f -- "$tmp"; exit 1; }
wc -c < "$p"`;
  return ['sh', '-c', script, 'sandbox-write', workspace, path];
}
