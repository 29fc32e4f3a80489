/**
 * The workspace archive (docs/snapshots.md, "Archive"): a POSIX pax tar stream (IEEE 1003.1-2001
 * ustar headers, each entry preceded by a pax extended header carrying its exact path, mtime and,
 * for symlinks, target), entries in the canonical order of archive-digest.ts. Regular files,
 * directories (a trailing `/` in the name, as tar writes them) and symlinks only. Any tar can list
 * or extract it; `GET /v1/archive` writes it and `PUT /v1/archive` reads it.
 *
 * {@link encodeEntryHeader} writes the headers of one entry; the content follows, padded to 512
 * bytes ({@link padding}); {@link END_OF_ARCHIVE} closes the stream. {@link TarReader} parses a
 * stream chunk by chunk into entries and content pieces, refusing anything else (other entry
 * types, bad checksums, oversized headers, a truncated stream).
 */
import { ARCHIVE_LIMITS, ArchiveFormatError, show, type ArchiveEntry } from './archive-digest.js';

/** Tar block size. */
export const BLOCK = 512;
/** Two zero blocks end an archive. */
export const END_OF_ARCHIVE = Buffer.alloc(2 * BLOCK);
/** Largest size an ustar size field holds (11 octal digits); larger sizes go in the pax header. */
const MAX_OCTAL_SIZE = 0o77777777777;
/** Owner of every entry in the header (informative only: restores write as the agent's user). */
const OWNER_ID = 1000;

/** Bytes of zero padding after `size` bytes of content. */
export function padding(size: number): number {
  const rest = size % BLOCK;
  return rest === 0 ? 0 : BLOCK - rest;
}

/** The pax header and the ustar header of an entry (content follows separately). */
export function encodeEntryHeader(entry: ArchiveEntry): Buffer {
  const name = entry.type === 'dir' ? Buffer.concat([entry.path, Buffer.from('/')]) : entry.path;
  const records: Buffer[] = [paxRecord('path', name), paxRecord('mtime', Buffer.from(entry.mtime))];
  if (entry.linkTarget) records.push(paxRecord('linkpath', entry.linkTarget));
  if (entry.size > MAX_OCTAL_SIZE) records.push(paxRecord('size', Buffer.from(String(entry.size))));
  const pax = Buffer.concat(records);
  const paxHeader = ustarHeader({
    name: Buffer.from('PaxHeader'),
    mode: 0o644,
    size: pax.length,
    mtime: 0,
    type: 'x',
  });
  const header = ustarHeader({
    name: name.length <= 100 ? name : name.subarray(0, 100),
    mode: entry.mode,
    size: entry.type === 'file' && entry.size <= MAX_OCTAL_SIZE ? entry.size : 0,
    mtime: Math.max(0, Math.floor(Number(entry.mtime))),
    type: entry.type === 'file' ? '0' : entry.type === 'dir' ? '5' : '2',
    linkName: entry.linkTarget && entry.linkTarget.length <= 100 ? entry.linkTarget : undefined,
  });
  return Buffer.concat([paxHeader, pax, Buffer.alloc(padding(pax.length)), header]);
}

function paxRecord(key: string, value: Buffer): Buffer {
  const body = Buffer.concat([Buffer.from(` ${key}=`), value, Buffer.from('\n')]);
  // The length prefix counts itself: find the digit count that is self-consistent.
  let length = body.length + 1;
  while (String(length).length + body.length !== length) length = String(length).length + body.length;
  return Buffer.concat([Buffer.from(String(length)), body]);
}

interface UstarFields {
  name: Buffer;
  mode: number;
  size: number;
  mtime: number;
  type: string;
  linkName?: Buffer;
}

function ustarHeader(f: UstarFields): Buffer {
  const h = Buffer.alloc(BLOCK);
  f.name.copy(h, 0, 0, Math.min(f.name.length, 100));
  octal(h, 100, 8, f.mode & 0o7777);
  octal(h, 108, 8, OWNER_ID);
  octal(h, 116, 8, OWNER_ID);
  octal(h, 124, 12, f.size);
  octal(h, 136, 12, Math.min(f.mtime, MAX_OCTAL_SIZE));
  h.write(f.type, 156, 'latin1');
  if (f.linkName) f.linkName.copy(h, 157, 0, Math.min(f.linkName.length, 100));
  h.write('ustar\u000000', 257, 'latin1');
  h.fill(0x20, 148, 156);
  let sum = 0;
  for (const byte of h) sum += byte;
  h.write(`${sum.toString(8).padStart(6, '0')}\u0000 `, 148, 'latin1');
  return h;
}

function octal(h: Buffer, offset: number, width: number, value: number): void {
  h.write(`${value.toString(8).padStart(width - 1, '0')}\u0000`, offset, 'latin1');
}

/** What {@link TarReader.push} found: an entry's headers, content bytes, or the end. */
export type TarEvent =
  | { readonly kind: 'entry'; readonly entry: ArchiveEntry }
  | { readonly kind: 'data'; readonly bytes: Buffer }
  | { readonly kind: 'end' };

type State =
  | { readonly at: 'header' }
  | { readonly at: 'pax'; remaining: number; readonly parts: Buffer[]; readonly size: number }
  | { readonly at: 'data'; remaining: number; pad: number }
  | { readonly at: 'skip'; remaining: number }
  | { readonly at: 'end' };

/**
 * A streaming tar parser for workspace archives. Feed it chunks; it returns the events in them.
 * Content bytes are sub-arrays of the chunks (no copy). Call {@link finish} at the end of input:
 * it throws when the archive was cut short.
 */
export class TarReader {
  private state: State = { at: 'header' };
  private pending = Buffer.alloc(0);
  private pax?: Map<string, Buffer>;
  private zeroBlocks = 0;
  /** Archive bytes read so far. */
  bytes = 0;

  /** Parses one chunk of input. */
  push(chunk: Buffer): TarEvent[] {
    this.bytes += chunk.length;
    const events: TarEvent[] = [];
    let input = this.pending.length > 0 ? Buffer.concat([this.pending, chunk]) : chunk;
    this.pending = Buffer.alloc(0);
    while (input.length > 0) {
      if (this.state.at === 'header') {
        if (input.length < BLOCK) {
          this.pending = Buffer.from(input);
          break;
        }
        const event = this.header(input.subarray(0, BLOCK));
        if (event) events.push(event);
        input = input.subarray(BLOCK);
      } else {
        input = this.body(input, events);
      }
    }
    return events;
  }

  /** Checks that the input ended where an archive may end. */
  finish(): void {
    if (this.state.at !== 'end') throw new ArchiveFormatError('the archive was cut short');
  }

  /** Consumes input in a non-header state; returns what is left. */
  private body(input: Buffer, events: TarEvent[]): Buffer {
    const state = this.state;
    switch (state.at) {
      case 'end':
        if (input.some((b) => b !== 0)) throw new ArchiveFormatError('data after the end of the archive');
        return Buffer.alloc(0);
      case 'data': {
        const take = Math.min(state.remaining, input.length);
        if (take > 0) events.push({ kind: 'data', bytes: input.subarray(0, take) });
        state.remaining -= take;
        if (state.remaining === 0) this.state = { at: 'skip', remaining: state.pad };
        return input.subarray(take);
      }
      case 'skip': {
        const take = Math.min(state.remaining, input.length);
        state.remaining -= take;
        if (state.remaining === 0) this.state = { at: 'header' };
        return input.subarray(take);
      }
      case 'pax': {
        const take = Math.min(state.remaining, input.length);
        state.parts.push(input.subarray(0, take));
        state.remaining -= take;
        if (state.remaining === 0) {
          this.pax = parsePax(Buffer.concat(state.parts).subarray(0, state.size));
          this.state = { at: 'header' };
        }
        return input.subarray(take);
      }
      case 'header':
        return input;
    }
  }

  private header(block: Buffer): TarEvent | undefined {
    if (block.every((b) => b === 0)) return this.zeroBlock();
    if (this.zeroBlocks > 0) throw new ArchiveFormatError('a zero block inside the archive');
    checkHeader(block);
    const type = String.fromCharCode(block[156] ?? 0);
    const size = readOctal(block, 124, 12);
    if (type === 'x') {
      this.startPax(size);
      return undefined;
    }
    const pax = this.pax ?? new Map<string, Buffer>();
    this.pax = undefined;
    const entry = entryOf(block, type, size, pax);
    const dataSize = entry.type === 'file' ? entry.size : 0;
    this.state =
      dataSize > 0 ? { at: 'data', remaining: dataSize, pad: padding(dataSize) } : { at: 'header' };
    return { kind: 'entry', entry };
  }

  private zeroBlock(): TarEvent | undefined {
    if (this.pax) throw new ArchiveFormatError('a pax header without its entry');
    this.zeroBlocks++;
    if (this.zeroBlocks < 2) return undefined;
    this.state = { at: 'end' };
    return { kind: 'end' };
  }

  private startPax(size: number): void {
    if (this.pax) throw new ArchiveFormatError('two pax headers for one entry');
    if (size > ARCHIVE_LIMITS.maxPaxBytes) throw new ArchiveFormatError(`a pax header of ${size} bytes`);
    if (size === 0) {
      this.pax = new Map();
      return;
    }
    this.state = { at: 'pax', remaining: size + padding(size), parts: [], size };
  }
}

function checkHeader(block: Buffer): void {
  if (block.toString('latin1', 257, 263) !== 'ustar\u0000' || block.toString('latin1', 263, 265) !== '00')
    throw new ArchiveFormatError('not a POSIX ustar header');
  const stored = readOctal(block, 148, 8);
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : (block[i] ?? 0);
  if (sum !== stored) throw new ArchiveFormatError('a tar header checksum does not match');
}

const KINDS: Record<string, ArchiveEntry['type']> = {
  '0': 'file',
  '\u0000': 'file',
  '5': 'dir',
  '2': 'symlink',
};

function entryOf(block: Buffer, type: string, ustarSize: number, pax: Map<string, Buffer>): ArchiveEntry {
  const kind = KINDS[type];
  if (kind === undefined) throw new ArchiveFormatError(`entry type ${JSON.stringify(type)} is not allowed`);
  const path = entryPath(block, kind, pax);
  const mtime = pax.get('mtime')?.toString('latin1') ?? String(readOctal(block, 136, 12));
  if (!/^\d{1,12}(\.\d{1,9})?$/.test(mtime)) throw new ArchiveFormatError(`${show(path)}: bad mtime`);
  const mode = readOctal(block, 100, 8) & 0o7777;
  if (kind === 'dir') return { path, type: kind, mode, mtime, size: 0 };
  if (kind === 'file') return { path, type: kind, mode, mtime, size: entrySize(path, ustarSize, pax) };
  const linkTarget = pax.get('linkpath') ?? cString(block, 157, 100);
  if (linkTarget.length === 0 || linkTarget.length > ARCHIVE_LIMITS.maxLinkBytes || linkTarget.includes(0))
    throw new ArchiveFormatError(`${show(path)}: bad symlink target`);
  return { path, type: 'symlink', mode: 0, mtime, size: 0, linkTarget };
}

function entryPath(block: Buffer, kind: ArchiveEntry['type'], pax: Map<string, Buffer>): Buffer {
  const path = pax.get('path') ?? ustarName(block);
  return kind === 'dir' && path.at(-1) === 0x2f ? path.subarray(0, -1) : path;
}

function entrySize(path: Buffer, ustarSize: number, pax: Map<string, Buffer>): number {
  const text = pax.get('size')?.toString('latin1');
  const size = text === undefined ? ustarSize : Number(text);
  if (!Number.isSafeInteger(size) || size < 0) throw new ArchiveFormatError(`${show(path)}: bad size`);
  return size;
}

function ustarName(block: Buffer): Buffer {
  const name = cString(block, 0, 100);
  const prefix = cString(block, 345, 155);
  return prefix.length > 0 ? Buffer.concat([prefix, Buffer.from('/'), name]) : name;
}

function cString(block: Buffer, offset: number, width: number): Buffer {
  const field = block.subarray(offset, offset + width);
  const nul = field.indexOf(0);
  return Buffer.from(nul < 0 ? field : field.subarray(0, nul));
}

function readOctal(block: Buffer, offset: number, width: number): number {
  let end = offset + width;
  while (end > offset && (block[end - 1] === 0 || block[end - 1] === 0x20)) end--;
  const text = block.toString('latin1', offset, end).trim();
  if (text === '') return 0;
  if (!/^[0-7]+$/.test(text)) throw new ArchiveFormatError('a numeric tar header field is not octal');
  return parseInt(text, 8);
}

const PAX_KEYS = new Set(['path', 'linkpath', 'mtime', 'size']);

/** Parses pax records (`<len> <key>=<value>\n`); keys other than path, linkpath, mtime, size are ignored. */
function parsePax(data: Buffer): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  let at = 0;
  while (at < data.length) {
    const { key, value, length } = paxRecordAt(data, at);
    if (PAX_KEYS.has(key)) out.set(key, value);
    at += length;
  }
  return out;
}

function paxRecordAt(data: Buffer, at: number): { key: string; value: Buffer; length: number } {
  const space = data.indexOf(0x20, at);
  if (space < 0 || space - at > 10) throw new ArchiveFormatError('a malformed pax record');
  const length = Number(data.toString('latin1', at, space));
  if (!Number.isSafeInteger(length) || length <= space - at + 1 || at + length > data.length)
    throw new ArchiveFormatError('a malformed pax record length');
  const record = data.subarray(space + 1, at + length);
  if (record.at(-1) !== 0x0a) throw new ArchiveFormatError('a pax record without its newline');
  const eq = record.indexOf(0x3d);
  if (eq <= 0) throw new ArchiveFormatError('a pax record without a key');
  return {
    key: record.toString('latin1', 0, eq),
    value: Buffer.from(record.subarray(eq + 1, record.length - 1)),
    length,
  };
}
