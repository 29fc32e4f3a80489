/** Reading a byte stream into memory with a hard limit. */
import { Transform, type Readable } from 'node:stream';

import { ProblemError } from '../errors.js';

/**
 * Reads the whole stream; destroys it and throws payload-too-large past `limit` bytes. Rejects
 * with the stream's error, or with ERR_STREAM_PREMATURE_CLOSE when it closes before its end. Plain
 * listeners rather than `for await`: this runs once per exec, and the async iterator costs more
 * than the rest of reading a short answer.
 */
export function readLimited(stream: Readable, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (err: Error | undefined): void => {
      if (settled) return;
      settled = true;
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('error', onError);
      stream.off('close', onClose);
      if (err) reject(err);
      else resolve(Buffer.concat(chunks, size));
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limit) {
        settle(new ProblemError('payload-too-large', `the response exceeds ${limit} bytes`));
        stream.destroy();
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => settle(undefined);
    const onError = (err: Error): void => settle(err);
    // 'close' without 'end' (or 'error' first): the stream was cut off.
    const onClose = (): void => settle(stream.errored ?? prematureClose());
    if (stream.readableEnded) return settle(undefined);
    if (stream.destroyed) return onClose();
    stream.on('data', onData);
    stream.on('end', onEnd);
    stream.on('error', onError);
    stream.on('close', onClose);
  });
}

function prematureClose(): Error {
  return Object.assign(new Error('premature close'), { code: 'ERR_STREAM_PREMATURE_CLOSE' });
}

/**
 * Passes a stream through, failing it with payload-too-large once more than `limit` bytes went by;
 * `mapError` turns the source's errors into the caller's (e.g. a transport failure into a problem).
 */
export function capStream(
  stream: Readable,
  limit: number,
  mapError: (err: Error) => Error = (e) => e,
): Readable {
  let size = 0;
  const capped = new Transform({
    transform(chunk: Buffer, _enc, cb): void {
      size += chunk.length;
      if (size > limit)
        cb(new ProblemError('payload-too-large', `the file exceeds the limit of ${limit} bytes`));
      else cb(null, chunk);
    },
  });
  stream.on('error', (err) => capped.destroy(mapError(err)));
  capped.on('close', () => stream.destroy());
  return stream.pipe(capped);
}
