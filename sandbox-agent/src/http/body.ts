/**
 * Reading request bodies within a byte limit (413 beyond it, before buffering the excess).
 *
 * Over the limit, reading stops but the request is not destroyed: the server answers 413 and
 * drains the rest of the body (see server.ts). Destroying it instead would reset the connection
 * while the client still writes, and clients such as Node's http module then see EPIPE or
 * ECONNRESET instead of the 413.
 */
import type { IncomingMessage } from 'node:http';

import { HttpProblem } from './problem.js';

/** Throws 413 when the declared Content-Length already exceeds `limit`. */
export function checkDeclaredLength(req: IncomingMessage, limit: number): void {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > limit) {
    throw new HttpProblem('payload-too-large', `the body is ${declared} bytes, the limit is ${limit}`);
  }
}

/** The request body as chunks, without destroying the request when the reader stops early. */
export function bodyChunks(req: IncomingMessage): AsyncIterable<Buffer> {
  return req.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>;
}

/**
 * The request body as chunks, read from the socket ahead of the consumer up to `aheadBytes`.
 * For a consumer that works synchronously between its awaits (the archive restore, which gives
 * the event loop a turn every few milliseconds): each turn drains what the socket received into
 * the queue, so the sender's window stays open while the consumer works and more of the transfer
 * overlaps the work (with `bodyChunks`, whose stream buffers 16 KiB, a restore of 100 MiB under
 * gVisor waited 0.76 s of its 3.1 s for bytes; with this, 0.55 of 2.8: docs/benchmarks.md,
 * "where a fork's restore goes"). Bounded: past `aheadBytes`
 * queued the request is paused until the consumer took half. Like `bodyChunks`, stopping early
 * leaves the request alone (the server drains or closes it).
 */
export async function* readAhead(req: IncomingMessage, aheadBytes: number): AsyncGenerator<Buffer> {
  const queue: Buffer[] = [];
  let queued = 0;
  let ended = false;
  let failed: Error | undefined;
  let wake: (() => void) | undefined;
  const notify = (): void => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  const onData = (chunk: Buffer): void => {
    queue.push(chunk);
    queued += chunk.length;
    if (queued >= aheadBytes) req.pause();
    notify();
  };
  const onEnd = (): void => {
    ended = true;
    notify();
  };
  const onError = (err: Error): void => {
    failed ??= err;
    notify();
  };
  const onClose = (): void => {
    if (!req.complete) failed ??= new Error('the request was closed before its body ended');
    notify();
  };
  /** The next queued chunk, resuming the request once half the bound is free again. */
  const take = (): Buffer | undefined => {
    const chunk = queue.shift();
    if (!chunk) return undefined;
    queued -= chunk.length;
    if (req.isPaused() && queued <= aheadBytes / 2) req.resume();
    return chunk;
  };
  req.on('data', onData);
  req.on('end', onEnd);
  req.on('error', onError);
  req.on('close', onClose);
  try {
    for (;;) {
      const chunk = take();
      if (chunk) {
        yield chunk;
        continue;
      }
      if (failed) throw failed;
      if (ended) return;
      await new Promise<void>((resolve) => (wake = resolve));
    }
  } finally {
    req.off('data', onData);
    req.off('end', onEnd);
    req.off('error', onError);
    req.off('close', onClose);
    // No reader any more: pause, so no byte is dropped before the server drains or closes it.
    req.pause();
  }
}

/** Reads the whole body, at most `limit` bytes. */
export async function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  checkDeclaredLength(req, limit);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of bodyChunks(req)) {
    size += chunk.length;
    if (size > limit)
      throw new HttpProblem('payload-too-large', `the body exceeds the limit of ${limit} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** Reads and parses a JSON body (400 when it is not JSON). */
export async function readJson(req: IncomingMessage, limit: number): Promise<unknown> {
  return parseJson(await readBody(req, limit));
}

/** Parses JSON text (400 when it is not JSON). */
export function parseJson(bytes: Buffer, what = 'the body'): unknown {
  try {
    return JSON.parse(bytes.toString('utf8')) as unknown;
  } catch (err) {
    throw new HttpProblem('invalid-request', `${what} is not valid JSON`, { cause: err });
  }
}
