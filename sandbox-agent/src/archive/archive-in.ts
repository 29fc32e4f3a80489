/**
 * Taking an archive in (`PUT /v1/archive`): the workspace is emptied, the archive is written into
 * it entry by entry while its digest is computed over exactly what is written, and the digest is
 * compared with the one the caller expects. Anything wrong (a malformed or out-of-order archive,
 * more bytes than allowed, a digest mismatch, the caller going away) empties the workspace again:
 * it never holds a partial or different tree afterwards.
 *
 * The archive is hostile input (it came out of a sandbox): names and order are checked by the
 * hasher before anything touches the disk (no `..`, no absolute path, every parent a directory the
 * archive itself created), files are created with O_EXCL | O_NOFOLLOW, symlinks are created as
 * links and never written through, and the total is bounded. Modes and mtimes are applied once an
 * entry is complete (a directory's when its last child is written, so a read-only directory can
 * still be filled). mtimes go through utimes(2) as a double: restored to the microsecond.
 *
 * File system calls are synchronous (under gVisor an asynchronous one costs several times a small
 * file's own work: loop-turn.ts), with a turn of the event loop between the archive's chunks and
 * at least every SLICE_MS within one. A file's bytes are written in pieces of up to WRITE_BYTES
 * (the network hands them over in chunks of a few KiB: one write each made a restore of 1,000
 * files of 100 KiB twice as slow on the host, more under gVisor).
 */
import {
  chmodSync,
  closeSync,
  constants,
  fchmodSync,
  futimesSync,
  lutimesSync,
  mkdirSync,
  openSync,
  symlinkSync,
  utimesSync,
  writeSync,
  writevSync,
} from 'node:fs';
import { readdir, rm } from 'node:fs/promises';

import {
  ArchiveFormatError,
  TarReader,
  TreeHasher,
  type ArchiveEntry,
  type ArchiveSummary,
} from '@sandbox-platform/api';

import { HttpProblem } from '../http/problem.js';
import { LoopTurn } from './loop-turn.js';

/** What the restore must produce. */
export interface RestoreOptions {
  /** The digest the written tree must have. */
  readonly digest: string;
  /** Largest archive (bytes) accepted. */
  readonly maxBytes: number;
}

/** A file's bytes are gathered up to this much before one write. */
const WRITE_BYTES = 1024 * 1024;

const CREATE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
const SLASH = Buffer.from('/');

interface OpenDir {
  readonly path: Buffer;
  readonly entry: ArchiveEntry;
}

/** Empties the workspace, writes the archive into it and verifies it; see the module comment. */
export async function restoreWorkspace(
  root: string,
  body: AsyncIterable<Buffer>,
  opts: RestoreOptions,
): Promise<ArchiveSummary> {
  await emptyWorkspace(root);
  const writer = new TreeWriter(Buffer.from(root));
  try {
    const summary = await writer.run(body, opts.maxBytes);
    if (summary.digest !== opts.digest)
      throw new HttpProblem(
        'digest-mismatch',
        `the written workspace has digest ${summary.digest}, expected ${opts.digest}; the workspace was emptied`,
      );
    return summary;
  } catch (err) {
    writer.abort();
    await emptyWorkspace(root);
    if (err instanceof ArchiveFormatError)
      throw new HttpProblem('archive-invalid', `${err.message}; the workspace was emptied`, { cause: err });
    throw err;
  }
}

/** Removes every entry of the workspace (symlinks as links: never what they point to). */
export async function emptyWorkspace(root: string): Promise<void> {
  const names = await readdir(root);
  await Promise.all(names.map((name) => rm(`${root}/${name}`, { recursive: true, force: true })));
}

class TreeWriter {
  private readonly hasher = new TreeHasher();
  private readonly reader = new TarReader();
  private readonly dirs: OpenDir[] = [];
  private readonly turn = new LoopTurn();
  private file?: { fd: number; entry: ArchiveEntry; absolute: Buffer };
  /** Bytes of the current file not written yet. */
  private pending: Buffer[] = [];
  private pendingBytes = 0;

  constructor(private readonly root: Buffer) {}

  async run(body: AsyncIterable<Buffer>, maxBytes: number): Promise<ArchiveSummary> {
    let ended = false;
    for await (const chunk of body) {
      this.turn.turned();
      if (this.reader.bytes + chunk.length > maxBytes)
        throw new HttpProblem(
          'payload-too-large',
          `the archive exceeds ${maxBytes} bytes; the workspace was emptied`,
        );
      for (const event of this.reader.push(chunk)) {
        if (event.kind === 'entry') this.entry(event.entry);
        else if (event.kind === 'data') this.data(event.bytes);
        else ended = true;
        await this.turn.maybe();
      }
    }
    this.reader.finish();
    if (!ended) throw new ArchiveFormatError('the archive has no end');
    this.closeDirsUntil(undefined);
    const tree = this.hasher.finish();
    return {
      digest: tree.digest,
      files: tree.files,
      directories: tree.directories,
      symlinks: tree.symlinks,
      skipped: 0,
      contentBytes: tree.contentBytes,
      archiveBytes: this.reader.bytes,
    };
  }

  /** Closes the file being written, if any (after a failure). */
  abort(): void {
    const file = this.file;
    this.file = undefined;
    this.pending = [];
    this.pendingBytes = 0;
    if (!file) return;
    try {
      closeSync(file.fd);
    } catch {
      // Closing after a failure: the workspace is emptied next either way.
    }
  }

  private entry(entry: ArchiveEntry): void {
    // The hasher checks names and order first: nothing is created for a refused entry.
    this.hasher.add(entry);
    const parent = parentOf(entry.path);
    this.closeDirsUntil(parent);
    const absolute = Buffer.concat([this.root, SLASH, entry.path]);
    switch (entry.type) {
      case 'dir':
        mkdirSync(absolute, { mode: 0o700 });
        this.dirs.push({ path: entry.path, entry });
        return;
      case 'symlink':
        symlinkSync(entry.linkTarget ?? Buffer.alloc(0), absolute);
        lutimesSync(absolute, seconds(entry.mtime), seconds(entry.mtime));
        return;
      case 'file': {
        const fd = openSync(absolute, CREATE_FLAGS, 0o600);
        this.file = { fd, entry, absolute };
        if (entry.size === 0) this.endFile();
        return;
      }
    }
  }

  private data(bytes: Buffer): void {
    const file = this.file;
    if (!file) throw new ArchiveFormatError('file data outside a file');
    this.hasher.data(bytes);
    this.pending.push(bytes);
    this.pendingBytes += bytes.length;
    const last = !this.hasher.inFile;
    if (last || this.pendingBytes >= WRITE_BYTES) this.flush(file.fd);
    if (last) this.endFile();
  }

  /** Writes the gathered bytes of the current file. */
  private flush(fd: number): void {
    const pieces = this.pending;
    const total = this.pendingBytes;
    this.pending = [];
    this.pendingBytes = 0;
    const written = writevSync(fd, pieces);
    if (written === total) return;
    // A short write (rare for a regular file): the rest one piece at a time.
    const rest = Buffer.concat(pieces, total).subarray(written);
    let done = 0;
    while (done < rest.length) done += writeSync(fd, rest, done, rest.length - done);
  }

  private endFile(): void {
    const file = this.file;
    if (!file) return;
    this.file = undefined;
    try {
      fchmodSync(file.fd, file.entry.mode);
      futimesSync(file.fd, seconds(file.entry.mtime), seconds(file.entry.mtime));
    } finally {
      closeSync(file.fd);
    }
  }

  /** Applies mode and mtime to every open directory that is not `parent` or one of its ancestors. */
  private closeDirsUntil(parent: Buffer | undefined): void {
    for (;;) {
      const top = this.dirs.at(-1);
      if (!top || (parent !== undefined && isSelfOrAncestor(top.path, parent))) return;
      this.dirs.pop();
      const absolute = Buffer.concat([this.root, SLASH, top.path]);
      chmodSync(absolute, top.entry.mode);
      utimesSync(absolute, seconds(top.entry.mtime), seconds(top.entry.mtime));
    }
  }
}

function parentOf(path: Buffer): Buffer {
  const cut = path.lastIndexOf(0x2f);
  return cut < 0 ? Buffer.alloc(0) : path.subarray(0, cut);
}

function isSelfOrAncestor(dir: Buffer, path: Buffer): boolean {
  if (dir.equals(path)) return true;
  return path.length > dir.length && path[dir.length] === 0x2f && path.subarray(0, dir.length).equals(dir);
}

/** A pax mtime (`seconds[.fraction]`) as the seconds utimes takes. */
function seconds(mtime: string): number {
  return Number(mtime);
}
