/**
 * The workspace content digest (docs/snapshots.md, "Digest"): the root of a Merkle tree over the
 * workspace, computed from entries in the canonical order (a depth-first walk, the children of a
 * directory sorted by the bytes of their names), so one pass and O(depth) memory suffice on both
 * sides: the agent while it streams a workspace out or writes one in, anyone reading an archive.
 *
 * Every directory (the workspace root included) hashes, with SHA-256, the text
 * `sandbox-tree-v1\n` followed by one line per child in order:
 *
 *     <t> <mode octal> <child hash hex> <name length>:<name bytes>\n
 *
 * where t is `f` (regular file: hash = SHA-256 of its bytes), `l` (symlink: hash = SHA-256 of its
 * target, mode 0) or `d` (directory: hash = its own tree hash), and mode is `st_mode & 07777`.
 * The digest is `sha256:<hex>` of the root. mtimes, owners and the root's own mode are not part of
 * it (mtimes are restored all the same). Names are bytes: no encoding is assumed.
 *
 * The hasher also checks the order: an entry whose parent directory is not the current one (or an
 * ancestor of it), or that does not sort after its previous sibling, is refused. An archive in any
 * other order cannot be hashed in one pass, and two orders of one tree would hash the same anyway.
 */
import { createHash, type Hash } from 'node:crypto';

/** What kinds of entries a workspace archive holds. */
export type ArchiveEntryType = 'file' | 'dir' | 'symlink';

/** One entry, as walked or as read from an archive. */
export interface ArchiveEntry {
  /** Workspace-relative path, `/`-separated, no leading or trailing `/`, bytes as on disk. */
  readonly path: Buffer;
  readonly type: ArchiveEntryType;
  /** `st_mode & 07777` (0 for symlinks). */
  readonly mode: number;
  /** Modification time in seconds since the epoch, as a decimal string with up to 9 fraction digits. */
  readonly mtime: string;
  /** Bytes of a file's content (0 for directories and symlinks). */
  readonly size: number;
  /** A symlink's target, as stored (never resolved). */
  readonly linkTarget?: Buffer;
}

/** Bounds of an archive (hostile input: the archive came out of a sandbox). */
export const ARCHIVE_LIMITS = {
  /** Longest path (bytes), as Linux's PATH_MAX less the NUL. */
  maxPathBytes: 4095,
  /** Longest name (one path segment), as Linux's NAME_MAX. */
  maxNameBytes: 255,
  /** Longest symlink target (bytes). */
  maxLinkBytes: 4095,
  /** Largest pax extended header (bytes): a path and a target with their keys fit many times. */
  maxPaxBytes: 64 * 1024,
} as const;

/** The archive is not valid (order, names, framing, bounds); the message says what. */
export class ArchiveFormatError extends Error {
  override readonly name = 'ArchiveFormatError';
}

/** Counts of a hashed tree. */
export interface TreeSummary {
  /** `sha256:<64 hex>`. */
  readonly digest: string;
  readonly files: number;
  readonly directories: number;
  readonly symlinks: number;
  /** Bytes of file content. */
  readonly contentBytes: number;
}

const HEADER = 'sandbox-tree-v1\n';
const SLASH = 0x2f;

interface Frame {
  readonly path: Buffer;
  readonly mode: number;
  readonly hash: Hash;
  last?: Buffer;
}

/** One-pass Merkle digest of entries given in the canonical order (see the module comment). */
export class TreeHasher {
  private readonly stack: Frame[] = [{ path: Buffer.alloc(0), mode: 0, hash: newDirHash() }];
  private file?: { name: Buffer; mode: number; hash: Hash; remaining: number };
  private files = 0;
  private directories = 0;
  private symlinks = 0;
  private contentBytes = 0;
  private done = false;

  /** Adds an entry; a file's bytes follow through {@link data}, then {@link endFile}. */
  add(entry: ArchiveEntry): void {
    if (this.done) throw new ArchiveFormatError('an entry after the end of the archive');
    if (this.file) throw new ArchiveFormatError('an entry before the previous file ended');
    const { parent, name } = splitPath(entry.path);
    this.enter(parent, name);
    switch (entry.type) {
      case 'dir':
        this.directories++;
        this.stack.push({ path: entry.path, mode: entry.mode & 0o7777, hash: newDirHash() });
        return;
      case 'symlink': {
        const target = entry.linkTarget ?? Buffer.alloc(0);
        if (target.length === 0) throw new ArchiveFormatError(`symlink ${show(entry.path)} has no target`);
        this.symlinks++;
        this.line('l', 0, createHash('sha256').update(target).digest(), name);
        return;
      }
      case 'file':
        this.files++;
        this.file = { name, mode: entry.mode & 0o7777, hash: createHash('sha256'), remaining: entry.size };
        if (entry.size === 0) this.endFile();
        return;
    }
  }

  /** Bytes of the current file. */
  data(chunk: Buffer): void {
    const file = this.file;
    if (!file) throw new ArchiveFormatError('file data outside a file');
    if (chunk.length > file.remaining) throw new ArchiveFormatError('file data beyond its size');
    file.remaining -= chunk.length;
    this.contentBytes += chunk.length;
    file.hash.update(chunk);
    if (file.remaining === 0) this.endFile();
  }

  /** True while a file's bytes are expected. */
  get inFile(): boolean {
    return this.file !== undefined;
  }

  /** Closes the tree; every directory is hashed into its parent. */
  finish(): TreeSummary {
    if (this.file) throw new ArchiveFormatError('the archive ended inside a file');
    if (this.done) throw new ArchiveFormatError('the tree was finished twice');
    while (this.stack.length > 1) this.pop();
    this.done = true;
    const root = this.stack[0];
    if (!root) throw new Error('tree stack is empty');
    return {
      digest: `sha256:${root.hash.digest('hex')}`,
      files: this.files,
      directories: this.directories,
      symlinks: this.symlinks,
      contentBytes: this.contentBytes,
    };
  }

  private endFile(): void {
    const file = this.file;
    if (!file || file.remaining !== 0) throw new ArchiveFormatError('a file ended before its size');
    this.file = undefined;
    this.line('f', file.mode, file.hash.digest(), file.name);
  }

  /** Pops finished directories until `parent` is the current one, then checks the sibling order. */
  private enter(parent: Buffer, name: Buffer): void {
    while (!this.top().path.equals(parent)) {
      // A directory still open that is an ancestor of the parent: the parent itself was never
      // added (or is out of order). The root is an ancestor of everything.
      if (this.stack.length === 1 || isAncestor(this.top().path, parent))
        throw new ArchiveFormatError(`${show(parent)} is not a directory of the archive (or out of order)`);
      this.pop();
    }
    const top = this.top();
    if (top.last && Buffer.compare(name, top.last) <= 0)
      throw new ArchiveFormatError(`${show(name)} in ${show(parent) || '/'} is out of order or repeated`);
    top.last = name;
  }

  private pop(): void {
    const frame = this.stack.pop();
    const parent = this.stack.at(-1);
    if (!frame || !parent) throw new ArchiveFormatError('an entry outside the workspace');
    const { name } = splitPath(frame.path);
    this.line('d', frame.mode, frame.hash.digest(), name);
  }

  private line(type: 'f' | 'l' | 'd', mode: number, hash: Buffer, name: Buffer): void {
    this.top().hash.update(`${type} ${mode.toString(8)} ${hash.toString('hex')} ${name.length}:`);
    this.top().hash.update(name);
    this.top().hash.update('\n');
  }

  private top(): Frame {
    const top = this.stack.at(-1);
    if (!top) throw new ArchiveFormatError('an entry outside the workspace');
    return top;
  }
}

function newDirHash(): Hash {
  return createHash('sha256').update(HEADER);
}

/** True when `dir` is a proper ancestor of `path` (or the root, for any path). */
function isAncestor(dir: Buffer | undefined, path: Buffer): boolean {
  if (dir === undefined) return false;
  if (dir.length === 0) return true;
  return path.length > dir.length && path[dir.length] === SLASH && path.subarray(0, dir.length).equals(dir);
}

/**
 * Splits and checks a workspace-relative path: no empty, `.` or `..` segment, no NUL, no leading or
 * trailing `/`, within the bounds.
 */
export function splitPath(path: Buffer): { parent: Buffer; name: Buffer } {
  if (path.length === 0 || path.length > ARCHIVE_LIMITS.maxPathBytes)
    throw new ArchiveFormatError(`path of ${path.length} bytes (1..${ARCHIVE_LIMITS.maxPathBytes})`);
  if (path.includes(0)) throw new ArchiveFormatError('a path holds a NUL byte');
  const cut = path.lastIndexOf(SLASH);
  if (cut === 0) throw new ArchiveFormatError(`${show(path)}: absolute paths are not allowed`);
  const name = path.subarray(cut + 1);
  const parent = cut < 0 ? Buffer.alloc(0) : path.subarray(0, cut);
  if (name.length === 0 || name.length > ARCHIVE_LIMITS.maxNameBytes)
    throw new ArchiveFormatError(`${show(path)}: a name of ${name.length} bytes (1..255)`);
  if (isDots(name) || (parent.length > 0 && splitSegments(parent).some((s) => s.length === 0 || isDots(s))))
    throw new ArchiveFormatError(`${show(path)}: empty, "." or ".." segment`);
  return { parent, name };
}

function splitSegments(path: Buffer): Buffer[] {
  const out: Buffer[] = [];
  let start = 0;
  for (let i = 0; i <= path.length; i++) {
    if (i === path.length || path[i] === SLASH) {
      out.push(path.subarray(start, i));
      start = i + 1;
    }
  }
  return out;
}

function isDots(name: Buffer): boolean {
  return (
    (name.length === 1 && name[0] === 0x2e) || (name.length === 2 && name[0] === 0x2e && name[1] === 0x2e)
  );
}

/** A path for messages: UTF-8 with replacement characters, at most 200 characters. */
export function show(path: Buffer): string {
  const text = path.toString('utf8');
  return text.length > 200 ? `${text.slice(0, 200)}...` : text;
}

/** True when `digest` has the form `sha256:<64 lowercase hex>`. */
export function isTreeDigest(digest: string): boolean {
  return /^sha256:[0-9a-f]{64}$/.test(digest);
}
