/**
 * Files under the workspace. Every path is checked lexically (parseWorkspacePath) and then by
 * real path: the target (GET) or its parent (PUT) must resolve inside the real workspace, so a
 * symlink pointing out of it is refused with 403. PUT writes a temp file in the target's real
 * directory and renames it over the target: readers see the old or the new file, never a part.
 *
 * Threat model: the agent runs as the same user as the commands, so this guards callers of the
 * files API against leaving the workspace by accident or by a planted symlink; a command racing
 * the check could swap a directory for a symlink between check and use, but it could read the
 * same files through exec anyway. The final open uses O_NOFOLLOW so a last-moment symlink fails.
 */
import { randomBytes } from 'node:crypto';
import { constants, type Stats } from 'node:fs';
import { lstat, mkdir, open, realpath, rename, stat, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';

import { HttpProblem } from '../http/problem.js';
import { isWithin } from './workspace-path.js';

/** An opened file ready to be streamed. */
export interface OpenedFile {
  handle: FileHandle;
  size: number;
}

/** Result of a PUT. */
export interface WrittenFile {
  path: string;
  size: number;
}

/** File operations confined to one workspace directory. */
export class FileStore {
  private constructor(private readonly root: string) {}

  /** Opens the store; fails fast when the workspace does not exist or is not a directory. */
  static async open(workspace: string): Promise<FileStore> {
    const root = await realpath(workspace).catch((err: unknown) => {
      throw new Error(`workspace ${workspace} is not usable`, { cause: err });
    });
    if (!(await stat(root)).isDirectory()) throw new Error(`workspace ${workspace} is not a directory`);
    return new FileStore(root);
  }

  /** The real path of the workspace. */
  get workspace(): string {
    return this.root;
  }

  /**
   * Opens a regular file for reading (404 when missing, 403 outside, 400 when not a regular file).
   *
   * Never blocks on special files: open(2) of a FIFO without a writer blocks until one appears,
   * inside one of libuv's four I/O threads; four such GETs starved every later file call and
   * every /proc read of the timeout kill while /healthz stayed green. So the type is checked with
   * stat (which does not open) and the open uses O_NONBLOCK (a FIFO or device then opens at once
   * or fails) before fstat checks the type again on the handle, in case the path was swapped.
   */
  async read(segments: readonly string[]): Promise<OpenedFile> {
    if (segments.length === 0)
      throw new HttpProblem('invalid-request', 'the path names the workspace itself');
    const real = await realpath(join(this.root, ...segments)).catch(fsProblem);
    this.confine(real);
    requireRegularFile(await stat(real).catch(fsProblem));
    const flags = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
    const handle = await open(real, flags).catch(fsProblem);
    try {
      const info = await handle.stat();
      requireRegularFile(info);
      return { handle, size: info.size };
    } catch (err) {
      await handle.close();
      throw err;
    }
  }

  /**
   * Writes `body` atomically, creating parent directories; at most `limit` bytes (413 beyond,
   * and nothing is left behind).
   */
  async write(segments: readonly string[], body: AsyncIterable<Buffer>, limit: number): Promise<WrittenFile> {
    const name = segments.at(-1);
    if (name === undefined) throw new HttpProblem('invalid-request', 'the path names the workspace itself');
    const parent = await this.ensureDirectory(segments.slice(0, -1));
    const target = join(parent, name);
    const existing = await lstat(target).catch(missingAsUndefined);
    // A symlink is replaced (never written through); a FIFO, socket or device is refused like a
    // directory, so a PUT never turns a pipe another process waits on into a file by surprise.
    if (existing !== undefined && !existing.isSymbolicLink()) requireRegularFile(existing);
    const temp = join(parent, `.${name}.${randomBytes(6).toString('hex')}.tmp`);
    const size = await writeNew(temp, body, limit);
    await rename(temp, target).catch(async (err: unknown) => {
      await unlink(temp);
      fsProblem(err);
    });
    return { path: segments.join('/'), size };
  }

  /** Walks `segments` from the root, creating missing directories, refusing any that leave it. */
  private async ensureDirectory(segments: readonly string[]): Promise<string> {
    let current = this.root;
    for (const segment of segments) {
      const next = join(current, segment);
      const info = await lstat(next).catch(missingAsUndefined);
      if (info === undefined) {
        await mkdir(next).catch(existsIsFine);
      }
      current = await this.realDirectory(next);
    }
    return current;
  }

  private async realDirectory(path: string): Promise<string> {
    const real = await realpath(path).catch(fsProblem);
    this.confine(real);
    const info: Stats = await stat(real).catch(fsProblem);
    if (!info.isDirectory())
      throw new HttpProblem('invalid-request', 'a parent of the path is not a directory');
    return real;
  }

  private confine(real: string): void {
    if (!isWithin(this.root, real)) throw new HttpProblem('path-forbidden', 'the path leaves the workspace');
  }
}

/** Creates `path` exclusively and copies at most `limit` bytes into it; removes it on any failure. */
async function writeNew(path: string, body: AsyncIterable<Buffer>, limit: number): Promise<number> {
  const handle = await open(path, 'wx', 0o644).catch(fsProblem);
  try {
    const size = await copyLimited(body, handle, limit).finally(() => handle.close());
    return size;
  } catch (err) {
    await unlink(path);
    throw err;
  }
}

async function copyLimited(body: AsyncIterable<Buffer>, handle: FileHandle, limit: number): Promise<number> {
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > limit)
      throw new HttpProblem('payload-too-large', `the file exceeds the limit of ${limit} bytes`);
    await handle.write(chunk);
  }
  return size;
}

/** Refuses anything but a regular file with 400, naming what it is. */
function requireRegularFile(info: Stats): void {
  if (info.isFile()) return;
  throw new HttpProblem('invalid-request', `the path is ${fileKind(info)}, not a regular file`);
}

function fileKind(info: Stats): string {
  if (info.isDirectory()) return 'a directory';
  if (info.isFIFO()) return 'a named pipe (FIFO)';
  if (info.isSocket()) return 'a socket';
  if (info.isCharacterDevice() || info.isBlockDevice()) return 'a device';
  if (info.isSymbolicLink()) return 'a symbolic link';
  return 'a special file';
}

function missingAsUndefined(err: unknown): undefined {
  if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
  return fsProblem(err);
}

function existsIsFine(err: unknown): void {
  // Another request created it in the meantime: the realpath check that follows still applies.
  if ((err as NodeJS.ErrnoException).code !== 'EEXIST') fsProblem(err);
}

/** Maps file system errors to problems; unknown ones propagate as 500s. */
function fsProblem(err: unknown): never {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOENT' || code === 'ENOTDIR')
    throw new HttpProblem('not-found', 'no such file', { cause: err });
  if (code === 'EACCES' || code === 'EPERM')
    throw new HttpProblem('path-forbidden', 'permission denied', { cause: err });
  if (code === 'ELOOP')
    throw new HttpProblem('path-forbidden', 'the path is a symbolic link', { cause: err });
  if (code === 'EISDIR') throw new HttpProblem('invalid-request', 'the path is a directory', { cause: err });
  if (code === 'ENAMETOOLONG')
    throw new HttpProblem('invalid-request', 'the path is too long', { cause: err });
  throw err;
}
