/**
 * archiveWorkspace reads files ahead of the one it writes (archive-out.ts): the archive still
 * holds every entry in the walk's canonical order with exactly its bytes, and a walk that stops
 * early (the caller went away) leaves no file of the workspace open.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { TarReader, type ArchiveEntry } from '@sandbox-platform/api';

import { READ_AHEAD, archiveWorkspace } from '../../src/archive/archive-out.js';

let root: string;
/** name -> content of the regular files written. */
const files = new Map<string, Buffer>();

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'read-ahead-'));
  await mkdir(join(root, 'sub'));
  // More files than READ_AHEAD, of sizes around the 1 MiB read: empty, small, exactly one read,
  // one read and a bit (a second read after the prefetched head).
  const sizes = [0, 1, 511, 512, 4096, 1024 * 1024, 1024 * 1024 + 7, 2 * 1024 * 1024 + 1];
  for (let i = 0; i < 4 * READ_AHEAD; i++) {
    const name = `${i % 3 === 0 ? 'sub/' : ''}f${String(i).padStart(2, '0')}`;
    const content = randomBytes(sizes[i % sizes.length]!);
    files.set(name, content);
    await writeFile(join(root, name), content);
  }
  await symlink('/etc/passwd', join(root, 'sub', 'link'));
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

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

describe('archiveWorkspace with read-ahead', () => {
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

  it('closes the files it read ahead when the walk stops early', async () => {
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
    // The closes of the prefetched files are not awaited by the walk: give them a turn.
    for (let i = 0; i < 50 && (await openFds()) > before; i++) await new Promise((r) => setTimeout(r, 10));
    expect(await openFds()).toBe(before);
  });
});
