/**
 * Streaming the workspace out as an archive (crds/src/wire/archive.ts), hashing it as it goes
 * (archive-digest.ts): `GET /v1/archive` writes the tar stream to the response; `GET
 * /v1/archive/digest` runs the same walk with no sink and answers the digest only.
 *
 * A file is opened (O_NOFOLLOW, O_NONBLOCK: a path swapped for a symlink or a FIFO since the walk
 * is refused, not followed or waited on) and its size, mode and mtime come from the open file.
 * The workspace is live: a file that shrinks while it is read is padded with zeros to the size its
 * header announced, one that grows is cut at it; the digest covers exactly the bytes sent, so a
 * restore of the archive always verifies. Memory: one read buffer (at most READ_BYTES) at a time;
 * the sink's backpressure is awaited.
 *
 * File system calls are synchronous (under gVisor an asynchronous one costs several times a small
 * file's own work: loop-turn.ts), with a turn of the event loop at least every SLICE_MS.
 */
import { closeSync, constants, fstatSync, openSync, readSync, type BigIntStats } from 'node:fs';

import {
  END_OF_ARCHIVE,
  TreeHasher,
  encodeEntryHeader,
  padding,
  type ArchiveEntry,
  type ArchiveSummary,
} from '@sandbox-platform/api';

import { LoopTurn } from './loop-turn.js';
import { modeOf, mtimeOf, walkWorkspace, type WalkCounters } from './walk.js';

/** Where archive bytes go; resolves once the bytes may be written again (backpressure). */
export type ArchiveSink = (bytes: Buffer) => Promise<void>;

/** Largest read of a file at once. */
const READ_BYTES = 1024 * 1024;

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
  const turn = new LoopTurn();
  let archiveBytes = 0;
  const emit = async (bytes: Buffer): Promise<void> => {
    archiveBytes += bytes.length;
    if (!sink) return turn.maybe();
    await sink(bytes);
    turn.turned();
  };
  for await (const item of walkWorkspace(root, counters, turn)) {
    signal?.throwIfAborted();
    if (item.entry.type !== 'file' || !item.absolute) {
      hasher.add(item.entry);
      if (sink) await emit(encodeEntryHeader(item.entry));
      continue;
    }
    const file = openFile(item.absolute);
    if (file === 'gone') continue;
    if (file === 'special') {
      counters.skipped++;
      continue;
    }
    try {
      await sendFile(file, item.entry, hasher, { emit, archive: sink !== undefined });
    } finally {
      closeSync(file.fd);
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

/** A regular file of the walk, open, with its stat. */
interface OpenFile {
  readonly fd: number;
  readonly info: BigIntStats;
}

function openFile(path: Buffer): OpenFile | 'gone' | 'special' {
  let fd: number;
  try {
    fd = openSync(path, OPEN_FLAGS);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // Deleted, or replaced by a symlink (ELOOP), since the walk saw it: not in the archive.
    if (code === 'ENOENT' || code === 'ELOOP') return 'gone';
    if (code === 'ENXIO') return 'special'; // replaced by a socket or a FIFO without a reader
    throw new Error(`cannot open ${path.toString('utf8')} for the archive`, { cause: err });
  }
  try {
    const info = fstatSync(fd, { bigint: true });
    if (info.isFile()) return { fd, info };
  } catch (err) {
    closeSync(fd);
    throw err;
  }
  closeSync(fd);
  return 'special';
}

/** Where a file's bytes go: into the archive, or (a digest) only counted, with the loop's turns. */
interface FileOut {
  readonly emit: ArchiveSink;
  readonly archive: boolean;
}

/** Hashes the file and emits its header, bytes and padding (its bytes only for a digest). */
async function sendFile(
  file: OpenFile,
  walked: ArchiveEntry,
  hasher: TreeHasher,
  out: FileOut,
): Promise<void> {
  const { emit } = out;
  const entry: ArchiveEntry = {
    ...walked,
    mode: modeOf(file.info),
    mtime: mtimeOf(file.info),
    size: Number(file.info.size),
  };
  hasher.add(entry);
  const header = out.archive ? encodeEntryHeader(entry) : undefined;
  let position = 0;
  let first = true;
  while (position < entry.size) {
    const bytes = readSome(file.fd, position, Math.min(READ_BYTES, entry.size - position));
    hasher.data(bytes);
    position += bytes.length;
    if (!header) {
      await emit(bytes);
      continue;
    }
    const pad = position === entry.size ? Buffer.alloc(padding(entry.size)) : undefined;
    const parts = [first ? header : undefined, bytes, pad].filter((b) => b !== undefined);
    first = false;
    // A small file goes out with its header and padding in one write.
    await emit(parts.length === 1 ? bytes : Buffer.concat(parts, sumLength(parts)));
  }
  if (header && first) await emit(header); // an empty file: its header only
}

/** Reads up to `length` bytes at `position`; a file that shrank gives zeros for what is missing. */
function readSome(fd: number, position: number, length: number): Buffer {
  const buffer = Buffer.allocUnsafe(length);
  let filled = 0;
  while (filled < length) {
    const bytesRead = readSync(fd, buffer, filled, length - filled, position + filled);
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
