/**
 * Walking the workspace in the archive's canonical order (crds/src/wire/archive-digest.ts): depth
 * first, the entries of each directory sorted by the bytes of their names. Names are Buffers
 * end to end (a Linux name need not be UTF-8). Symlinks are reported with their target and never
 * followed, wherever they point (outside the workspace included). Sockets, FIFOs and devices are
 * counted and left out. An entry that disappears between the listing and its lstat (the workspace
 * is live) is left out too: the archive and its digest describe what was read.
 */
import type { BigIntStats } from 'node:fs';
import { lstat, readdir, readlink } from 'node:fs/promises';

import type { ArchiveEntry } from '@sandbox-platform/api';

/** An entry of the walk: the archive entry, and for files where to read them. */
export interface WalkItem {
  readonly entry: ArchiveEntry;
  /** Absolute path (files only; the reader opens it). */
  readonly absolute?: Buffer;
}

/** Counts the walk keeps besides its entries. */
export interface WalkCounters {
  skipped: number;
}

const SLASH = Buffer.from('/');
/** Entries of a directory lstat'ed at once. */
const STAT_BATCH = 32;

/** The workspace's entries in canonical order; `root` is the real path of the workspace. */
export async function* walkWorkspace(root: string, counters: WalkCounters): AsyncGenerator<WalkItem> {
  yield* walkDir(Buffer.from(root), Buffer.alloc(0), counters);
}

async function* walkDir(root: Buffer, rel: Buffer, counters: WalkCounters): AsyncGenerator<WalkItem> {
  const dir = rel.length === 0 ? root : Buffer.concat([root, SLASH, rel]);
  const names = await readdir(dir, { encoding: 'buffer' }).catch(vanished);
  if (!names) return;
  names.sort((a, b) => Buffer.compare(a, b));
  // The lstats of a directory's entries go out STAT_BATCH at a time (each is a slow round trip
  // under gVisor); the entries are still yielded in order.
  for (let at = 0; at < names.length; at += STAT_BATCH) {
    const batch = names.slice(at, at + STAT_BATCH);
    const infos = await Promise.all(
      batch.map((name) => lstat(Buffer.concat([dir, SLASH, name]), { bigint: true }).catch(vanished)),
    );
    for (const [i, name] of batch.entries()) yield* entryOf({ root, dir, rel }, name, infos[i], counters);
  }
}

/** Where a directory's entries are: the workspace, the directory, and its path inside. */
interface DirAt {
  readonly root: Buffer;
  readonly dir: Buffer;
  readonly rel: Buffer;
}

async function* entryOf(
  { root, dir, rel }: DirAt,
  name: Buffer,
  info: BigIntStats | undefined,
  counters: WalkCounters,
): AsyncGenerator<WalkItem> {
  const path = rel.length === 0 ? name : Buffer.concat([rel, SLASH, name]);
  const absolute = Buffer.concat([dir, SLASH, name]);
  if (!info) return;
  if (info.isDirectory()) {
    yield { entry: { path, type: 'dir', mode: modeOf(info), mtime: mtimeOf(info), size: 0 } };
    yield* walkDir(root, path, counters);
  } else if (info.isSymbolicLink()) {
    const linkTarget = await readlink(absolute, { encoding: 'buffer' }).catch(vanished);
    if (!linkTarget) return;
    yield { entry: { path, type: 'symlink', mode: 0, mtime: mtimeOf(info), size: 0, linkTarget } };
  } else if (info.isFile()) {
    yield {
      entry: { path, type: 'file', mode: modeOf(info), mtime: mtimeOf(info), size: Number(info.size) },
      absolute,
    };
  } else {
    counters.skipped++;
  }
}

/** `st_mode & 07777`. */
export function modeOf(info: BigIntStats): number {
  return Number(info.mode & 0o7777n);
}

/** The mtime as `seconds.nanoseconds` (the pax form). */
export function mtimeOf(info: BigIntStats): string {
  const ns = info.mtimeNs;
  const seconds = ns / 1_000_000_000n;
  const fraction = ns % 1_000_000_000n;
  if (ns < 0n) return '0';
  return fraction === 0n ? String(seconds) : `${seconds}.${String(fraction).padStart(9, '0')}`;
}

/** ENOENT: the entry went away while the walk was on it (undefined); anything else is an error. */
function vanished(err: unknown): undefined {
  if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
  throw err;
}
