/**
 * Streaming the workspace out as an archive (crds/src/wire/archive.ts), hashing it as it goes
 * (archive-digest.ts): `GET /v1/archive` writes the tar stream to the response; `GET
 * /v1/archive/digest` runs the same walk with no sink and answers the digest only.
 *
 * A file is opened (O_NOFOLLOW, O_NONBLOCK: a path swapped for a symlink or a FIFO since the walk
 * is refused, not followed or waited on) and its size, mode and mtime come from the open handle.
 * The workspace is live: a file that shrinks while it is read is padded with zeros to the size its
 * header announced, one that grows is cut at it; the digest covers exactly the bytes sent, so a
 * restore of the archive always verifies.
 *
 * Files are opened, stat'ed and their first READ_BYTES read up to READ_AHEAD files ahead of the one
 * being written, and written in the walk's order: under gVisor every open, stat and read is a slow
 * round trip through the sentry, and one file at a time made a 10,000-file workspace cost about 5 ms
 * per file (bench-snapshot). Memory: at most READ_AHEAD + 1 read buffers (READ_BYTES each); the
 * sink's backpressure is awaited.
 */
import { constants, type BigIntStats } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';

import {
  END_OF_ARCHIVE,
  TreeHasher,
  encodeEntryHeader,
  padding,
  type ArchiveEntry,
  type ArchiveSummary,
} from '@sandbox-platform/api';

import { modeOf, mtimeOf, walkWorkspace, type WalkCounters, type WalkItem } from './walk.js';

/** Where archive bytes go; resolves once the bytes may be written again (backpressure). */
export type ArchiveSink = (bytes: Buffer) => Promise<void>;

/** Largest read of a file at once. */
const READ_BYTES = 1024 * 1024;
/** Files opened and read ahead of the one being written. */
export const READ_AHEAD = 8;

const OPEN_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/**
 * Walks the workspace; with a sink, writes the archive to it. Resolves with the summary once the
 * end of the archive was written. `signal` stops the walk (the caller went away).
 */
export async function archiveWorkspace(
  root: string,
  sink: ArchiveSink | undefined,
  signal?: AbortSignal,
): Promise<ArchiveSummary> {
  const counters: WalkCounters = { skipped: 0 };
  const hasher = new TreeHasher();
  let archiveBytes = 0;
  const emit = async (bytes: Buffer): Promise<void> => {
    archiveBytes += bytes.length;
    if (sink) await sink(bytes);
  };
  const write = async (item: Prepared): Promise<void> => {
    const file = item.file;
    if (file === undefined) {
      hasher.add(item.entry);
      if (sink) await emit(encodeEntryHeader(item.entry));
    } else if (file === 'special') {
      counters.skipped++;
    } else if (file !== 'gone') {
      await sendFile(file, item.entry, hasher, sink ? emit : undefined);
    }
  };
  for await (const item of readAhead(walkWorkspace(root, counters))) {
    try {
      signal?.throwIfAborted();
      await write(item);
    } finally {
      if (typeof item.file === 'object') await item.file.handle.close();
    }
  }
  const tree = hasher.finish();
  if (sink) await emit(END_OF_ARCHIVE);
  return {
    digest: tree.digest,
    files: tree.files,
    directories: tree.directories,
    symlinks: tree.symlinks,
    skipped: counters.skipped,
    contentBytes: tree.contentBytes,
    archiveBytes: sink ? archiveBytes : 0,
  };
}

/** A file of the walk, open, with its stat and its first bytes read. */
interface OpenFile {
  readonly handle: FileHandle;
  readonly info: BigIntStats;
  /** The first min(size, READ_BYTES) bytes. */
  readonly head: Buffer;
}

/** A walk item with its file prepared (files only): open, gone since the walk, or not a file now. */
interface Prepared {
  readonly entry: ArchiveEntry;
  readonly file?: OpenFile | 'gone' | 'special';
}

/**
 * The walk's items in order, each file prepared up to READ_AHEAD items ahead. A prepared file
 * that is never consumed (an error, an abort) is closed here.
 */
async function* readAhead(walk: AsyncGenerator<WalkItem>): AsyncGenerator<Prepared> {
  const queue: Array<Promise<Prepared>> = [];
  try {
    for await (const item of walk) {
      const next = prepare(item);
      next.catch(() => undefined); // awaited in order below; never an unhandled rejection
      queue.push(next);
      if (queue.length > READ_AHEAD) yield await queue.shift()!;
    }
    while (queue.length > 0) yield await queue.shift()!;
  } finally {
    for (const left of queue.splice(0)) {
      void left
        .then((p) => (typeof p.file === 'object' ? p.file.handle.close() : undefined))
        .catch(() => undefined);
    }
  }
}

async function prepare(item: WalkItem): Promise<Prepared> {
  if (item.entry.type !== 'file' || !item.absolute) return { entry: item.entry };
  const file = await openFile(item.absolute);
  return { entry: item.entry, file };
}

async function openFile(path: Buffer): Promise<OpenFile | 'gone' | 'special'> {
  let handle: FileHandle;
  try {
    handle = await open(path, OPEN_FLAGS);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // Deleted, or replaced by a symlink (ELOOP), since the walk saw it: not in the archive.
    if (code === 'ENOENT' || code === 'ELOOP') return 'gone';
    if (code === 'ENXIO') return 'special'; // replaced by a socket or a FIFO without a reader
    throw new Error(`cannot open ${path.toString('utf8')} for the archive`, { cause: err });
  }
  try {
    const info = await handle.stat({ bigint: true });
    if (!info.isFile()) {
      await handle.close();
      return 'special';
    }
    const head = await readSome(handle, 0, Math.min(READ_BYTES, Number(info.size)));
    return { handle, info, head };
  } catch (err) {
    await handle.close().catch(() => undefined);
    throw err;
  }
}

async function sendFile(
  file: OpenFile,
  walked: ArchiveEntry,
  hasher: TreeHasher,
  emit: ArchiveSink | undefined,
): Promise<void> {
  const { handle, info } = file;
  const entry: ArchiveEntry = {
    ...walked,
    mode: modeOf(info),
    mtime: mtimeOf(info),
    size: Number(info.size),
  };
  hasher.add(entry);
  const header = emit ? encodeEntryHeader(entry) : undefined;
  let position = 0;
  let first = true;
  while (position < entry.size) {
    const bytes = first
      ? file.head
      : await readSome(handle, position, Math.min(READ_BYTES, entry.size - position));
    hasher.data(bytes);
    position += bytes.length;
    if (!emit) {
      first = false;
      continue;
    }
    const pad = position === entry.size ? Buffer.alloc(padding(entry.size)) : undefined;
    const parts = [first && header ? header : undefined, bytes, pad].filter((b) => b !== undefined);
    first = false;
    // A small file goes out with its header and padding in one write.
    await emit(parts.length === 1 ? bytes : Buffer.concat(parts, sumLength(parts)));
  }
  if (emit && first && header) await emit(header); // an empty file: its header only
}

/** Reads up to `length` bytes at `position`; a file that shrank gives zeros for what is missing. */
async function readSome(handle: FileHandle, position: number, length: number): Promise<Buffer> {
  const buffer = Buffer.allocUnsafe(length);
  let filled = 0;
  while (filled < length) {
    const { bytesRead } = await handle.read(buffer, filled, length - filled, position + filled);
    if (bytesRead === 0) {
      buffer.fill(0, filled);
      break;
    }
    filled += bytesRead;
  }
  return buffer;
}

function sumLength(parts: Buffer[]): number {
  let n = 0;
  for (const p of parts) n += p.length;
  return n;
}
