/**
 * The filesystem calls envd has and the agent has not (stat, list, make dir, move, remove) as
 * short bash scripts run in the sandbox, and the parsing of what they print. Pure.
 *
 * Each script runs in a fresh `bash --noprofile --norc -c` (never in the session's persistent
 * shell's own state: a user's aliases or `cd` cannot change it) with the paths as positional
 * arguments, never spliced into the script. Entries are printed by GNU find as NUL-terminated
 * fields (names may hold any byte but NUL), read back here. Exit statuses carry the outcome:
 * 44 not found, 45 not a directory, 17 already exists; anything else non-zero is the command's
 * own failure, reported with the first line of its stderr.
 */
import { create, type MessageInitShape } from '@bufbuild/protobuf';
import { timestampFromMs } from '@bufbuild/protobuf/wkt';

import { EntryInfoSchema, FileType, type EntryInfo } from '../gen/filesystem/filesystem_pb.js';
import { shellWord } from './launcher.js';

/** Exit status of a script whose path does not exist. */
export const EXIT_NOT_FOUND = 44;
/** Exit status of a script whose path is not a directory. */
export const EXIT_NOT_DIRECTORY = 45;
/** Exit status of a script whose path already exists. */
export const EXIT_EXISTS = 17;

/** find's fields of one entry: type, size, octal mode, symbolic mode, owner, group, mtime, link target, path. */
const FIND_FORMAT = String.raw`%y\0%s\0%m\0%M\0%u\0%g\0%T@\0%l\0%p\0`;
const FIELDS = 9;
const SEARCH_PATH = 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
const EXISTS = '[ -e "$1" ] || [ -L "$1" ]';

/** The command that runs `script` with `args` as $1, $2... in a fresh bash. */
export function freshBash(script: string, args: readonly string[] = []): string {
  return [
    SEARCH_PATH,
    '/bin/bash --noprofile --norc -c',
    shellWord(script),
    'e2b',
    ...args.map(shellWord),
  ].join(' ');
}

/** stat: the entry itself (a symlink as a symlink). */
export function statScript(): string {
  return `${EXISTS} || exit ${EXIT_NOT_FOUND}\nexec find "$1" -maxdepth 0 -printf '${FIND_FORMAT}'`;
}

/** list: the entries under $1 down to depth $2 (a symlink to a directory is listed through). */
export function listScript(): string {
  return [
    `${EXISTS} || exit ${EXIT_NOT_FOUND}`,
    `[ -d "$1" ] || exit ${EXIT_NOT_DIRECTORY}`,
    `find -H "$1" -mindepth 1 -maxdepth "$2" -printf '${FIND_FORMAT}'`,
    // Unreadable subdirectories make find exit 1 after listing the rest: the rest is the answer.
    'rc=$?; [ $rc -le 1 ] && exit 0; exit $rc',
  ].join('\n');
}

/** make dir: with its parents; 17 when it exists. */
export function makeDirScript(): string {
  return [
    `if ${EXISTS}; then exit ${EXIT_EXISTS}; fi`,
    'mkdir -p -- "$1" || exit 1',
    `exec find "$1" -maxdepth 0 -printf '${FIND_FORMAT}'`,
  ].join('\n');
}

/** move: $1 to $2 (replacing a file there; never into a directory there). */
export function moveScript(): string {
  return [
    `${EXISTS} || exit ${EXIT_NOT_FOUND}`,
    'mv -T -- "$1" "$2" || exit 1',
    `exec find "$2" -maxdepth 0 -printf '${FIND_FORMAT}'`,
  ].join('\n');
}

/** remove: a file, link or whole directory. */
export function removeScript(): string {
  return `${EXISTS} || exit ${EXIT_NOT_FOUND}\nexec rm -rf -- "$1"`;
}

const TYPES: Record<string, FileType> = {
  f: FileType.FILE,
  d: FileType.DIRECTORY,
  l: FileType.SYMLINK,
};

function entryFrom(f: string[]): EntryInfo {
  const [type, size, mode, perms, owner, group, mtime, link, path] = f as [
    string,
    string,
    string,
    string,
    string,
    string,
    string,
    string,
    string,
  ];
  const init: MessageInitShape<typeof EntryInfoSchema> = {
    name: path.slice(path.lastIndexOf('/') + 1),
    type: TYPES[type] ?? FileType.UNSPECIFIED,
    path,
    size: BigInt(/^\d+$/.test(size) ? size : '0'),
    mode: Number.parseInt(mode, 8) || 0,
    permissions: perms,
    owner,
    group,
    modifiedTime: timestampFromMs(Math.round(Number.parseFloat(mtime) * 1000) || 0),
  };
  if (type === 'l') init.symlinkTarget = link;
  return create(EntryInfoSchema, init);
}

/** The entries find printed (a cut last entry, from an output cap, is dropped). */
export function parseEntries(out: Buffer): EntryInfo[] {
  const fields = out.toString('utf8').split('\0');
  const entries: EntryInfo[] = [];
  // Every field ends with a NUL, so a whole entry is followed by at least one more element.
  for (let i = 0; i + FIELDS < fields.length; i += FIELDS) {
    entries.push(entryFrom(fields.slice(i, i + FIELDS)));
  }
  return entries;
}
