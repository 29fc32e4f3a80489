/**
 * Walking the workspace in the archive's canonical order (crds/src/wire/archive-digest.ts): depth
 * first, the entries of each directory sorted by the bytes of their names. Names are Buffers
 * end to end (a Linux name need not be UTF-8). Symlinks are reported with their target and never
 * followed, wherever they point (outside the workspace included). Sockets, FIFOs and devices are
 * counted and left out. An entry that disappears between the listing and its lstat (the workspace
 * is live) is left out too: the archive and its digest describe what was read. File system calls
 * are synchronous, with a turn of the event loop between entries (loop-turn.ts).
 */
import { lstatSync, readdirSync, readlinkSync, type BigIntStats } from 'node:fs';

import type { ArchiveEntry } from '@sandbox-platform/api';

import { LoopTurn } from './loop-turn.js';

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

/** The workspace's entries in canonical order; `root` is the real path of the workspace. */
export async function* walkWorkspace(
  root: string,
  counters: WalkCounters,
  turn: LoopTurn = new LoopTurn(),
): AsyncGenerator<WalkItem> {
  yield* walkDir({ root: Buffer.from(root), counters, turn }, Buffer.alloc(0));
}

/** What every level of the walk shares. */
interface Walk {
  readonly root: Buffer;
  readonly counters: WalkCounters;
  readonly turn: LoopTurn;
}

async function* walkDir(walk: Walk, rel: Buffer): AsyncGenerator<WalkItem> {
  const dir = rel.length === 0 ? walk.root : Buffer.concat([walk.root, SLASH, rel]);
  const names = unlessVanished(() => readdirSync(dir, { encoding: 'buffer' }));
  if (!names) return;
  names.sort((a, b) => Buffer.compare(a, b));
  for (const name of names) {
    await walk.turn.maybe();
    const path = rel.length === 0 ? name : Buffer.concat([rel, SLASH, name]);
    const absolute = Buffer.concat([dir, SLASH, name]);
    const info = lstatSync(absolute, { bigint: true, throwIfNoEntry: false });
    if (!info) continue;
    if (info.isDirectory()) {
      yield { entry: { path, type: 'dir', mode: modeOf(info), mtime: mtimeOf(info), size: 0 } };
      yield* walkDir(walk, path);
    } else if (info.isSymbolicLink()) {
      const linkTarget = unlessVanished(() => readlinkSync(absolute, { encoding: 'buffer' }));
      if (!linkTarget) continue;
      yield { entry: { path, type: 'symlink', mode: 0, mtime: mtimeOf(info), size: 0, linkTarget } };
    } else if (info.isFile()) {
      yield {
        entry: { path, type: 'file', mode: modeOf(info), mtime: mtimeOf(info), size: Number(info.size) },
        absolute,
      };
    } else {
      walk.counters.skipped++;
    }
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
function unlessVanished<T>(call: () => T): T | undefined {
  try {
    return call();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}
