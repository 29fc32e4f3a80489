/**
 * The workspace archive and its digest (crds/src/wire/archive.ts, archive-digest.ts): what we
 * write, GNU tar reads (listing and extracting with the same paths, modes, targets and mtimes);
 * what we read back hashes to the same digest; the order, the framing and the bounds are enforced.
 */
import { execFileSync } from 'node:child_process';
import { lstatSync, mkdtempSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from '@jest/globals';

import {
  ArchiveFormatError,
  END_OF_ARCHIVE,
  TarReader,
  TreeHasher,
  encodeEntryHeader,
  padding,
  type ArchiveEntry,
  type TarEvent,
} from '../../src/wire/index.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function entry(path: string, type: ArchiveEntry['type'], extra: Partial<ArchiveEntry> = {}): ArchiveEntry {
  return {
    path: Buffer.from(path),
    type,
    mode: type === 'dir' ? 0o755 : 0o644,
    mtime: '1700000000.5',
    size: 0,
    ...extra,
  };
}

interface Item {
  entry: ArchiveEntry;
  content?: Buffer;
}

function archive(items: Item[]): Buffer {
  const parts: Buffer[] = [];
  for (const { entry: e, content } of items) {
    parts.push(encodeEntryHeader(e));
    if (content) parts.push(content, Buffer.alloc(padding(content.length)));
  }
  parts.push(END_OF_ARCHIVE);
  return Buffer.concat(parts);
}

function digestOf(items: Item[]): string {
  const h = new TreeHasher();
  for (const { entry: e, content } of items) {
    h.add(e);
    if (content && content.length > 0) h.data(content);
  }
  return h.finish().digest;
}

/** Reads an archive back in chunks of `step` bytes: entries, content and the digest. */
function readBack(data: Buffer, step: number): { items: Item[]; digest: string } {
  const reader = new TarReader();
  const hasher = new TreeHasher();
  const items: Item[] = [];
  const onEvent = (ev: TarEvent): void => {
    if (ev.kind === 'entry') {
      items.push({ entry: ev.entry, content: ev.entry.type === 'file' ? Buffer.alloc(0) : undefined });
      hasher.add(ev.entry);
    } else if (ev.kind === 'data') {
      const last = items.at(-1)!;
      last.content = Buffer.concat([last.content!, ev.bytes]);
      hasher.data(ev.bytes);
    }
  };
  for (let at = 0; at < data.length; at += step) reader.push(data.subarray(at, at + step)).forEach(onEvent);
  reader.finish();
  return { items, digest: hasher.finish().digest };
}

const long = `${'d'.repeat(120)}`;
const tree: Item[] = [
  { entry: entry('a', 'dir', { mode: 0o750 }) },
  { entry: entry('a/empty', 'dir', { mode: 0o700 }) },
  { entry: entry('a/run.sh', 'file', { mode: 0o755, size: 12 }), content: Buffer.from('echo hello\n\n') },
  { entry: entry(long, 'dir') },
  { entry: entry(`${long}/f`, 'file', { size: 1000 }), content: Buffer.alloc(1000, 7) },
  { entry: entry('escape', 'symlink', { mode: 0, linkTarget: Buffer.from('/etc/passwd') }) },
  { entry: entry('z.txt', 'file', { size: 0 }), content: Buffer.alloc(0) },
];

describe('the workspace archive', () => {
  it('is read by GNU tar with the same paths, modes, symlink targets and mtimes', () => {
    const dir = mkdtempSync(join(tmpdir(), 'archive-'));
    dirs.push(dir);
    const file = join(dir, 'a.tar');
    writeFileSync(file, archive(tree));
    const listing = execFileSync('tar', ['-tvf', file], { encoding: 'utf8' });
    expect(listing).toContain('drwxr-x---');
    expect(listing).toContain('escape -> /etc/passwd');
    expect(listing).toContain(`${long}/f`);
    const out = join(dir, 'x');
    execFileSync('mkdir', [out]);
    execFileSync('tar', ['-xpf', file, '-C', out]);
    expect(readFileSync(join(out, 'a/run.sh'), 'utf8')).toBe('echo hello\n\n');
    expect(lstatSync(join(out, 'a/run.sh')).mode & 0o7777).toBe(0o755);
    expect(lstatSync(join(out, 'a/empty')).isDirectory()).toBe(true);
    expect(readlinkSync(join(out, 'escape'))).toBe('/etc/passwd');
    expect(lstatSync(join(out, 'a/run.sh')).mtimeMs).toBe(1700000000500);
  });

  it('reads back exactly what was written, in any chunking, with the same digest', () => {
    const data = archive(tree);
    const expected = digestOf(tree);
    for (const step of [1, 7, 511, 512, 513, 4096, data.length]) {
      const back = readBack(data, step);
      expect(back.digest).toBe(expected);
      expect(back.items.map((i) => i.entry)).toEqual(tree.map((i) => i.entry));
      expect(back.items.map((i) => i.content)).toEqual(tree.map((i) => i.content));
    }
    expect(expected).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it('changes the digest with a byte, a mode, a target or a name, not with an mtime', () => {
    const base = digestOf(tree);
    const alter = (i: number, change: Partial<Item>): string =>
      digestOf(tree.map((item, at) => (at === i ? { ...item, ...change } : item)));
    expect(alter(2, { content: Buffer.from('echo hellO\n\n') })).not.toBe(base);
    expect(alter(2, { entry: { ...tree[2]!.entry, mode: 0o744 } })).not.toBe(base);
    expect(alter(1, { entry: { ...tree[1]!.entry, mode: 0o755 } })).not.toBe(base);
    expect(alter(5, { entry: { ...tree[5]!.entry, linkTarget: Buffer.from('/etc/shadow') } })).not.toBe(base);
    expect(alter(6, { entry: { ...tree[6]!.entry, path: Buffer.from('y.txt') } })).not.toBe(base);
    expect(alter(2, { entry: { ...tree[2]!.entry, mtime: '1' } })).toBe(base);
    // An empty directory counts: without it the tree is another one.
    expect(digestOf(tree.filter((_, i) => i !== 1))).not.toBe(base);
  });

  it('refuses entries out of the canonical order, repeated, or without their parent', () => {
    const h = () => new TreeHasher();
    const a = h();
    a.add(entry('b', 'dir'));
    expect(() => a.add(entry('a', 'dir'))).toThrow(ArchiveFormatError);
    const b = h();
    b.add(entry('a', 'file'));
    expect(() => b.add(entry('a', 'file'))).toThrow(/out of order or repeated/);
    expect(() => h().add(entry('x/y', 'file'))).toThrow(/not a directory of the archive/);
    const c = h();
    c.add(entry('a', 'dir'));
    c.add(entry('b', 'dir'));
    expect(() => c.add(entry('a/late', 'file'))).toThrow(/not a directory of the archive/);
  });

  it('refuses hostile names: "..", ".", absolute, empty segments, NUL, over-long', () => {
    for (const bad of [
      '..',
      'a/../b',
      './a',
      '/etc',
      'a//b',
      'a/',
      'x\u0000y',
      'n'.repeat(256),
      `a/${'p/'.repeat(2100)}q`,
    ]) {
      expect(() => new TreeHasher().add(entry(bad, 'file'))).toThrow(ArchiveFormatError);
    }
  });

  it('refuses a truncated stream, a bad checksum, other entry types and data after the end', () => {
    const data = archive(tree);
    const cut = new TarReader();
    cut.push(data.subarray(0, data.length - 600));
    expect(() => cut.finish()).toThrow(/cut short/);
    const bad = Buffer.from(data);
    bad[512 + 512 + 10] = 0x41; // a byte of the first ustar header's name
    expect(() => new TarReader().push(bad)).toThrow(/checksum/);
    const fifo = Buffer.from(encodeEntryHeader(entry('p', 'file')));
    const ustar = fifo.subarray(fifo.length - 512);
    ustar[156] = '6'.charCodeAt(0);
    ustar.fill(0x20, 148, 156);
    let sum = 0;
    for (const b of ustar) sum += b;
    ustar.write(`${sum.toString(8).padStart(6, '0')}\u0000 `, 148, 'latin1');
    expect(() => new TarReader().push(fifo)).toThrow(/not allowed/);
    expect(() => new TarReader().push(Buffer.concat([data, Buffer.from('x')]))).toThrow(/after the end/);
  });

  it('refuses a file whose data runs past its declared size in the hasher', () => {
    const h = new TreeHasher();
    h.add(entry('f', 'file', { size: 2 }));
    expect(() => h.data(Buffer.from('abc'))).toThrow(/beyond its size/);
  });
});
