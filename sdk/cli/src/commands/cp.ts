/**
 * `cp SRC DST`: one side a local path (or `-` for stdin/stdout), the other `NAME:PATH` in the
 * session's /workspace. Bytes are copied as they are (binary safe); files only, no directories.
 */
import { readFile, stat, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { Readable } from 'node:stream';

import { UsageError } from '../errors.js';
import { write, type Context } from '../io.js';
import { renderValue } from '../output.js';
import { cpTarget, type CpTarget } from '../parse.js';

/** Largest local file read for an upload (the gateway's own limit, 16 MiB by default, is lower). */
const MAX_UPLOAD_BYTES = 256 * 1024 * 1024;

export async function cp(ctx: Context): Promise<number> {
  const [src, dst, ...extra] = ctx.args;
  if (!src || !dst || extra.length)
    throw new UsageError(`cp needs SRC and DST: ${ctx.io.prog} cp ./f NAME:f`);
  const from = cpTarget(src);
  const to = cpTarget(dst);
  if (from.kind === 'remote' && to.kind === 'local') return download(ctx, from, to.path);
  if (from.kind === 'local' && to.kind === 'remote') return upload(ctx, from.path, to);
  throw new UsageError('cp copies between this machine and a session: exactly one side must be NAME:PATH');
}

async function upload(
  ctx: Context,
  local: string,
  to: Extract<CpTarget, { kind: 'remote' }>,
): Promise<number> {
  const data = local === '-' ? await readAll(ctx.io.stdin) : await readLocal(local);
  let path = to.path;
  if (path === '' || path.endsWith('/')) {
    if (local === '-') throw new UsageError('cp from stdin needs a file name: NAME:PATH');
    path += basename(local);
  }
  const result = await ctx.client().writeFile(to.session, path, data, { signal: ctx.io.signal });
  if (ctx.settings.output === 'json' || ctx.settings.output === 'yaml') {
    await write(ctx.io.stdout, renderValue(ctx.settings.output, result));
  }
  return 0;
}

async function download(
  ctx: Context,
  from: Extract<CpTarget, { kind: 'remote' }>,
  local: string,
): Promise<number> {
  if (from.path === '' || from.path.endsWith('/'))
    throw new UsageError(`cp copies files: name a file in ${from.session}`);
  const data = await ctx.client().readFile(from.session, from.path, { signal: ctx.io.signal });
  if (local === '-') {
    await write(ctx.io.stdout, data);
    return 0;
  }
  const target = (await isDirectory(local)) ? join(local, basename(from.path)) : local;
  await writeFile(target, data);
  return 0;
}

async function readLocal(path: string): Promise<Uint8Array> {
  const s = await stat(path);
  if (s.isDirectory()) throw new UsageError(`${path} is a directory: cp copies files`);
  if (s.size > MAX_UPLOAD_BYTES)
    throw new UsageError(`${path} is ${s.size} bytes: more than cp uploads (${MAX_UPLOAD_BYTES})`);
  return readFile(path);
}

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch (err) {
    // A target that does not exist yet is a file to create.
    if ((err as { code?: string }).code === 'ENOENT') return false;
    throw err;
  }
}

async function readAll(stream: Readable): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of stream) {
    const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string);
    total += b.byteLength;
    if (total > MAX_UPLOAD_BYTES)
      throw new UsageError(`stdin is more than cp uploads (${MAX_UPLOAD_BYTES} bytes)`);
    chunks.push(b);
  }
  return Buffer.concat(chunks);
}
