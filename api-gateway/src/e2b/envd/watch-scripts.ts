/**
 * Directory watching without inotify in the agent: a background process in the sandbox scans the
 * directory every half second with GNU find and prints what changed since the last scan, as
 * NUL-terminated records: `S` once the first scan is done (events after it are real), then
 * `C <name>` (created), `W <name>` (modified: size or time changed), `R <name>` (removed), names
 * relative to the watched directory. A rename shows as R of the old name and C of the new one;
 * permission changes are not seen. The streaming watch reads the records from the process's
 * output; the polled watcher (CreateWatcher) appends them to a file in its FIFO directory, which
 * GetWatcherEvents drains by renaming it first. Pure.
 */
import { EventType } from '../gen/filesystem/filesystem_pb.js';
import { ioDir, markerLine } from './launcher.js';

/** Seconds between two scans. */
export const SCAN_INTERVAL_SECONDS = 0.5;

/**
 * The watcher's command text. $1 the directory, $2 the depth ('' for recursive), $3 the events
 * file ('' for stdout). Exits 44 when the directory does not exist, 0 once it is gone.
 */
export function watcherScript(dir: string, recursive: boolean, io: string | undefined): string {
  const q = (s: string): string => `'${s.replaceAll("'", `'\\''`)}'`;
  const events = io === undefined ? '' : `${ioDir(io)}/events`;
  const setup = io === undefined ? '' : `mkdir -m 700 ${ioDir(io)} || exit 125\n`;
  return [
    markerLine({ watch: true }, io),
    `${setup}set -- ${q(dir)} ${recursive ? "''" : '1'} ${q(events)}`,
    'dir=$1; depth=(); [ -n "$2" ] && depth=(-maxdepth "$2"); out=$3',
    '[ -d "$dir" ] || exit 44',
    'declare -A prev cur',
    `scan() { cur=(); local p v; while IFS= read -r -d '' p && IFS= read -r -d '' v; do cur[$p]=$v; done < <(find "$dir" -mindepth 1 "\${depth[@]}" -printf '%p\\0%T@ %s\\0' 2>/dev/null); }`,
    // The events file is opened for each record, so a drain's rename starts a new one; stdout is
    // the agent's pipe (a socket: /dev/stdout cannot be opened), written as it is.
    `rec() { printf '%s %s\\0' "$1" "\${2#"$dir"/}"; }`,
    'emit() { if [ -n "$out" ]; then rec "$@" >>"$out"; else rec "$@"; fi; }',
    'keep() { prev=(); local k; for k in "${!cur[@]}"; do prev[$k]=${cur[$k]}; done; }',
    "scan; keep; printf 'S\\0'",
    `while [ -d "$dir" ]; do sleep ${SCAN_INTERVAL_SECONDS}; scan`,
    '  for k in "${!cur[@]}"; do if [ -z "${prev[$k]+x}" ]; then emit C "$k"; elif [ "${prev[$k]}" != "${cur[$k]}" ]; then emit W "$k"; fi; done',
    '  for k in "${!prev[@]}"; do [ -n "${cur[$k]+x}" ] || emit R "$k"; done',
    '  keep',
    'done',
  ].join('\n');
}

/** Drains a polled watcher's events file ($1): renamed first, so new events go to a new file. */
export function drainScript(): string {
  return '[ -e "$1" ] || exit 0\nmv -f -- "$1" "$1.r" 2>/dev/null || exit 0\ncat -- "$1.r"\nrm -f -- "$1.r"';
}

/** The events file of a polled watcher. */
export function eventsFile(io: string): string {
  return `${ioDir(io)}/events`;
}

/** One watch record. */
export type WatchRecord = { kind: 'ready' } | { kind: 'event'; type: EventType; name: string };

const TYPES: Record<string, EventType> = { C: EventType.CREATE, W: EventType.WRITE, R: EventType.REMOVE };

/** Splits watcher output into records; the bytes after the last NUL are returned as `rest`. */
export function parseRecords(bytes: Buffer): { records: WatchRecord[]; rest: Buffer } {
  const records: WatchRecord[] = [];
  let start = 0;
  for (let nul = bytes.indexOf(0); nul >= 0; nul = bytes.indexOf(0, start)) {
    const text = bytes.subarray(start, nul).toString('utf8');
    start = nul + 1;
    if (text === 'S') records.push({ kind: 'ready' });
    const type = TYPES[text.slice(0, 1)];
    if (type !== undefined && text[1] === ' ') records.push({ kind: 'event', type, name: text.slice(2) });
  }
  return { records, rest: bytes.subarray(start) };
}
