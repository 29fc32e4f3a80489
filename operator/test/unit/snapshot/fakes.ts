/** Fakes of the snapshot module's ports: an in-memory object store and archive builders. */
import { createHash } from 'node:crypto';

import {
  END_OF_ARCHIVE,
  TreeHasher,
  encodeEntryHeader,
  padding,
  type ArchiveEntry,
  type ArchiveSummary,
} from '@sandbox-platform/api';

import { StoreError, type ObjectStore } from '../../../src/snapshot/s3-client.js';

/** An in-memory bucket; `failAfter` makes the n-th and later puts fail as an unreachable store. */
export class MemoryStore implements ObjectStore {
  readonly objects = new Map<string, Buffer>();
  readonly describe = 'memory';
  puts = 0;
  failPutsFrom = Infinity;
  down = false;

  ensureBucket(): Promise<void> {
    return this.down ? Promise.reject(new StoreError('unavailable', 'down')) : Promise.resolve();
  }

  put(key: string, body: Buffer, sha256Hex: string): Promise<void> {
    this.puts++;
    if (this.down || this.puts >= this.failPutsFrom)
      return Promise.reject(new StoreError('unavailable', 'ECONNREFUSED'));
    if (createHash('sha256').update(body).digest('hex') !== sha256Hex)
      return Promise.reject(new StoreError('refused', 'XAmzContentSHA256Mismatch'));
    this.objects.set(key, Buffer.from(body));
    return Promise.resolve();
  }

  get(key: string): Promise<AsyncIterable<Buffer>> {
    if (this.down) return Promise.reject(new StoreError('unavailable', 'down'));
    const body = this.objects.get(key);
    if (!body) return Promise.reject(new StoreError('not-found', `GET ${key}: HTTP 404 NoSuchKey`));
    return Promise.resolve(
      (async function* () {
        for (let at = 0; at < body.length; at += 100_000) {
          await Promise.resolve();
          yield body.subarray(at, at + 100_000);
        }
      })(),
    );
  }

  list(prefix: string): Promise<string[]> {
    if (this.down) return Promise.reject(new StoreError('unavailable', 'down'));
    return Promise.resolve([...this.objects.keys()].filter((k) => k.startsWith(prefix)).sort());
  }

  delete(key: string): Promise<void> {
    if (this.down) return Promise.reject(new StoreError('unavailable', 'down'));
    this.objects.delete(key);
    return Promise.resolve();
  }
}

/** A file of the test tree. */
export interface TreeFile {
  readonly entry: ArchiveEntry;
  readonly content?: Buffer;
}

/** A tree: a directory, files (one large), an empty directory and a symlink out of the workspace. */
export function sampleTree(bigBytes = 3_000_000): TreeFile[] {
  const e = (path: string, type: ArchiveEntry['type'], extra: Partial<ArchiveEntry> = {}): ArchiveEntry => ({
    path: Buffer.from(path),
    type,
    mode: type === 'dir' ? 0o755 : 0o644,
    mtime: '1700000000',
    size: 0,
    ...extra,
  });
  const big = Buffer.alloc(bigBytes);
  for (let i = 0; i < big.length; i++) big[i] = (i * 7919) & 0xff;
  return [
    { entry: e('big.bin', 'file', { size: big.length }), content: big },
    { entry: e('empty', 'dir') },
    { entry: e('out', 'symlink', { mode: 0, linkTarget: Buffer.from('/etc/passwd') }) },
    { entry: e('src', 'dir') },
    { entry: e('src/a.txt', 'file', { size: 6 }), content: Buffer.from('alpha\n') },
  ];
}

/** The archive bytes and the summary an honest agent sends with them. */
export function archiveOf(tree: TreeFile[]): { bytes: Buffer; summary: ArchiveSummary } {
  const parts: Buffer[] = [];
  const h = new TreeHasher();
  for (const { entry, content } of tree) {
    parts.push(encodeEntryHeader(entry));
    h.add(entry);
    if (content && content.length > 0) {
      parts.push(content, Buffer.alloc(padding(content.length)));
      h.data(content);
    }
  }
  parts.push(END_OF_ARCHIVE);
  const bytes = Buffer.concat(parts);
  const t = h.finish();
  return {
    bytes,
    summary: {
      digest: t.digest,
      files: t.files,
      directories: t.directories,
      symlinks: t.symlinks,
      skipped: 0,
      contentBytes: t.contentBytes,
      archiveBytes: bytes.length,
    },
  };
}

/** The bytes as a stream of chunks of `step`. */
export async function* chunks(bytes: Buffer, step = 65536): AsyncGenerator<Buffer> {
  for (let at = 0; at < bytes.length; at += step) {
    await Promise.resolve();
    yield bytes.subarray(at, at + step);
  }
}
