/**
 * `run NAME [--file F | -] [-- CODE...]`: runs Python in a code context of a session (a Jupyter
 * kernel; variables persist between runs) and prints what it gives: stdout and stderr as they
 * come, results and displays as text, images saved with --out-dir, the traceback of an error.
 * Exits 0 (ok), 1 (error), 124 (timeout), 130 (interrupted) or 137 (the kernel died).
 * `watch NAME [PATH] [-r]`: prints one JSON line per change under a workspace directory.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';

import type { CodeEvent, CodeOutput, CodeStatus, RunCodeRequest } from '@sandbox-platform/client';

import { UsageError } from '../errors.js';
import { write, type Context } from '../io.js';
import { seconds } from '../parse.js';

/** Largest code read from a file or stdin (the gateway's limit is 512 Ki characters). */
const MAX_CODE_BYTES = 2 * 1024 * 1024;
const EXIT: Record<CodeStatus, number> = {
  ok: 0,
  error: 1,
  timeout: 124,
  interrupted: 130,
  'kernel-died': 137,
};
const IMAGE_EXT: Record<string, string> = {
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/gif': 'gif',
  'image/svg+xml': 'svg',
};
const TEXT_TYPES = ['text/plain', 'text/markdown', 'application/json', 'text/latex'];

export async function run(ctx: Context): Promise<number> {
  const [name, source, ...extra] = ctx.args;
  const usage = `${ctx.io.prog} run NAME [--file F | -] [-- CODE...]`;
  if (!name) throw new UsageError(`run needs a session: ${usage}`);
  if (extra.length) throw new UsageError(`run takes NAME and at most "-": ${usage}`);
  const req: RunCodeRequest = { code: await codeOf(ctx, source, usage) };
  const f = ctx.flags;
  if (typeof f.context === 'string') req.context = f.context;
  if (typeof f.timeout === 'string') req.timeoutSeconds = seconds(f.timeout, '--timeout');
  if (typeof f.wait === 'string') req.waitSeconds = seconds(f.wait, '--wait');
  const outDir = typeof f['out-dir'] === 'string' ? f['out-dir'] : undefined;
  let images = 0;
  let status: CodeStatus = 'ok';
  for await (const ev of ctx.client().runCodeStream(name, req, { signal: ctx.io.signal })) {
    if (ev.type === 'end') {
      status = ev.status;
      if (ev.truncated)
        await write(ctx.io.stderr, `${ctx.io.prog}: output was bounded and truncated by the sandbox\n`);
    } else images = await print(ctx, ev, { outDir, images });
  }
  if (status === 'timeout')
    await write(ctx.io.stderr, `${ctx.io.prog}: the code was interrupted at its timeout\n`);
  return EXIT[status];
}

async function codeOf(ctx: Context, source: string | undefined, usage: string): Promise<string> {
  const file = typeof ctx.flags.file === 'string' ? ctx.flags.file : undefined;
  const given = [file !== undefined, source === '-', ctx.rest.length > 0].filter(Boolean).length;
  if (given !== 1)
    throw new UsageError(`run needs the code in exactly one way: --file F, -, or after --: ${usage}`);
  if (file !== undefined) return bounded(await readFile(file), file);
  if (source === '-') return bounded(await readAll(ctx.io.stdin), 'stdin');
  return ctx.rest.join(' ');
}

function bounded(bytes: Buffer, what: string): string {
  if (bytes.byteLength > MAX_CODE_BYTES)
    throw new UsageError(`${what} is more than run sends (${MAX_CODE_BYTES} bytes)`);
  return bytes.toString('utf8');
}

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of stream) {
    const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string);
    total += b.byteLength;
    if (total > MAX_CODE_BYTES) break;
    chunks.push(b);
  }
  return Buffer.concat(chunks);
}

/** Prints one event; returns the number of images saved so far. */
async function print(
  ctx: Context,
  ev: Exclude<CodeEvent, { type: 'end' }>,
  o: { outDir?: string; images: number },
): Promise<number> {
  const { stdout, stderr } = ctx.io;
  if (ev.type === 'stdout' || ev.type === 'stderr') {
    await write(ev.type === 'stdout' ? stdout : stderr, ev.text);
    return o.images;
  }
  if (ev.type === 'error') {
    await write(stderr, `${ev.traceback.join('\n') || `${ev.name}: ${ev.value}`}\n`);
    return o.images;
  }
  return printOutput(ctx, ev as CodeOutput, o);
}

/** A result or display: images saved (or named), then its text. */
async function printOutput(
  ctx: Context,
  ev: CodeOutput,
  o: { outDir?: string; images: number },
): Promise<number> {
  const { stdout, stderr, prog } = ctx.io;
  let images = o.images;
  for (const [mime, ext] of Object.entries(IMAGE_EXT)) {
    const data = ev.data[mime];
    if (data === undefined) continue;
    images++;
    if (o.outDir === undefined) {
      await write(
        stderr,
        `${prog}: ${mime} (${data.length} characters of base64) not saved: pass --out-dir DIR\n`,
      );
      continue;
    }
    await mkdir(o.outDir, { recursive: true });
    const path = join(o.outDir, `output-${images}.${ext}`);
    await writeFile(path, mime === 'image/svg+xml' ? Buffer.from(data) : Buffer.from(data, 'base64'));
    await write(stderr, `${prog}: saved ${mime} to ${path}\n`);
  }
  const text = TEXT_TYPES.map((t) => ev.data[t]).find((v) => v !== undefined);
  if (text !== undefined && (ev.type === 'result' || images === o.images)) await write(stdout, `${text}\n`);
  for (const item of ev.omitted ?? [])
    await write(stderr, `${prog}: ${item.mime} of ${item.bytes} bytes omitted (over the size bound)\n`);
  return images;
}

export async function watchCommand(ctx: Context): Promise<number> {
  const [name, path, ...extra] = ctx.args;
  if (!name || extra.length)
    throw new UsageError(`watch needs a session: ${ctx.io.prog} watch NAME [PATH] [-r]`);
  const timeout = typeof ctx.flags.timeout === 'string' ? seconds(ctx.flags.timeout, '--timeout') : undefined;
  const req = {
    ...(path !== undefined ? { path } : {}),
    ...(ctx.flags.recursive === true ? { recursive: true } : {}),
    ...(timeout !== undefined ? { timeoutSeconds: timeout } : {}),
  };
  for await (const line of ctx.client().watch(name, req, { signal: ctx.io.signal })) {
    await write(ctx.io.stdout, `${JSON.stringify(line)}\n`);
  }
  return 0;
}
