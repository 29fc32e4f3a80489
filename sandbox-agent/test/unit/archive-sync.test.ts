/**
 * The archive routes' synchronous file calls (archive-out.ts, archive-in.ts, loop-turn.ts): the
 * archive holds every entry in canonical order with exactly its bytes across read sizes; a
 * restore sets every mode and mtime; neither leaves a file open when it stops early or fails; and
 * the event loop keeps getting turns while a workspace is read (the agent still answers probes).
 */
import { randomBytes } from 'node:crypto';
import { lstat, mkdir, mkdtemp, readdir, rm, symlink, utimes, chmod, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { TarReader, type ArchiveEntry } from '@sandbox-platform/api';

import { restoreWorkspace } from '../../src/archive/archive-in.js';
import { archiveWorkspace } from '../../src/archive/archive-out.js';

let root: string;
/** name -> content of the regular files written. */
const files = new Map<string, Buffer>();

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'read-ahead-'));
  await mkdir(join(root, 'sub'));
  // Files of sizes around the 1 MiB read: empty, small, exactly one read, one read and a bit.
  const sizes = [0, 1, 511, 512, 4096, 1024 * 1024, 1024 * 1024 + 7, 2 * 1024 * 1024 + 1];
  for (let i = 0; i < 32; i++) {
    const name = `${i % 3 === 0 ? 'sub/' : ''}f${String(i).padStart(2, '0')}`;
    const content = randomBytes(sizes[i % sizes.length]!);
    files.set(name, content);
    await writeFile(join(root, name), content);
    await chmod(join(root, name), 0o600 + (i % 2) * 0o044);
    await utimes(join(root, name), 1_700_000_000 + i, 1_700_000_000 + i);
  }
  await symlink('/etc/passwd', join(root, 'sub', 'link'));
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

async function archiveChunks(): Promise<{ chunks: Buffer[]; digest: string }> {
  const chunks: Buffer[] = [];
  const { digest } = await archiveWorkspace(root, (b) => {
    chunks.push(Buffer.from(b));
    return Promise.resolve();
  });
  return { chunks, digest };
}

async function* streamOf(chunks: Buffer[]): AsyncGenerator<Buffer> {
  for (const c of chunks) yield await Promise.resolve(c);
}

/** The archive's entries and each file's bytes, as the operator's reader sees them. */
function parse(chunks: Buffer[]): Array<{ entry: ArchiveEntry; bytes: Buffer }> {
  const reader = new TarReader();
  const out: Array<{ entry: ArchiveEntry; parts: Buffer[] }> = [];
  for (const chunk of chunks) {
    for (const event of reader.push(chunk)) {
      if (event.kind === 'entry') out.push({ entry: event.entry, parts: [] });
      else if (event.kind === 'data') out.at(-1)!.parts.push(event.bytes);
    }
  }
  return out.map((e) => ({ entry: e.entry, bytes: Buffer.concat(e.parts) }));
}

async function openFds(): Promise<number> {
  return (await readdir('/proc/self/fd')).length;
}

describe('archiveWorkspace', () => {
  it('writes every entry in canonical order with exactly its bytes', async () => {
    const chunks: Buffer[] = [];
    const summary = await archiveWorkspace(root, (b) => {
      chunks.push(Buffer.from(b));
      return Promise.resolve();
    });
    const entries = parse(chunks);
    const paths = entries.map((e) => e.entry.path.toString());
    const expected = ['f01', 'f02', 'f04', 'f05', 'f07', 'f08', 'f10', 'f11', 'f13', 'f14']
      .concat(['f16', 'f17', 'f19', 'f20', 'f22', 'f23', 'f25', 'f26', 'f28', 'f29', 'f31', 'sub'])
      .concat(['sub/f00', 'sub/f03', 'sub/f06', 'sub/f09', 'sub/f12', 'sub/f15', 'sub/f18'])
      .concat(['sub/f21', 'sub/f24', 'sub/f27', 'sub/f30', 'sub/link']);
    expect(paths).toEqual(expected);
    for (const { entry, bytes } of entries) {
      if (entry.type !== 'file') continue;
      expect(bytes.equals(files.get(entry.path.toString())!)).toBe(true);
    }
    expect(summary.files).toBe(files.size);
    // The same digest with no sink (GET /v1/archive/digest runs the walk alone).
    expect((await archiveWorkspace(root, undefined)).digest).toBe(summary.digest);
  });

  it('leaves no file open when the walk stops early', async () => {
    const before = await openFds();
    const stop = new AbortController();
    let writes = 0;
    await expect(
      archiveWorkspace(
        root,
        () => {
          if (++writes === 3) stop.abort(new Error('caller went away'));
          return Promise.resolve();
        },
        stop.signal,
      ),
    ).rejects.toThrow('caller went away');
    expect(await openFds()).toBe(before);
  });

  it('gives the event loop turns while it reads (about 17 MiB hashed here)', async () => {
    let turns = 0;
    let stop = false;
    const tick = (): void => {
      turns++;
      if (!stop) setImmediate(tick);
    };
    setImmediate(tick);
    await archiveWorkspace(root, undefined);
    stop = true;
    // With every call synchronous and no turn given, no setImmediate runs before the digest.
    expect(turns).toBeGreaterThan(0);
  });
});

describe('restoreWorkspace', () => {
  it('resolves only once every file has its mode and mtime', async () => {
    const { chunks, digest } = await archiveChunks();
    const target = await mkdtemp(join(tmpdir(), 'restore-'));
    try {
      await restoreWorkspace(target, streamOf(chunks), { digest, maxBytes: 1 << 30 });
      for (const name of files.keys()) {
        const info = await lstat(join(target, name));
        expect([name, info.mode & 0o777, Math.round(info.mtimeMs / 1000)]).toEqual([
          name,
          0o600 + (Number(name.slice(-2)) % 2) * 0o044,
          1_700_000_000 + Number(name.slice(-2)),
        ]);
      }
    } finally {
      await rm(target, { recursive: true, force: true });
    }
  });

  it('leaves no file open when the digest does not match', async () => {
    const { chunks } = await archiveChunks();
    const target = await mkdtemp(join(tmpdir(), 'restore-'));
    try {
      const before = await openFds();
      await expect(
        restoreWorkspace(target, streamOf(chunks), { digest: 'sha256:0', maxBytes: 1 << 30 }),
      ).rejects.toThrow(/digest/);
      expect(await openFds()).toBe(before);
      expect(await readdir(target)).toEqual([]);
    } finally {
      await rm(target, { recursive: true, force: true });
    }
  });
});
