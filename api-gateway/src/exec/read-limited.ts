/** Reading a byte stream into memory with a hard limit. */
import { Transform, type Readable } from 'node:stream';

import { ProblemError } from '../errors.js';

/** Reads the whole stream; destroys it and throws payload-too-large past `limit` bytes. */
export async function readLimited(stream: Readable, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    const buf = chunk as Buffer;
    size += buf.length;
    if (size > limit) {
      stream.destroy();
      throw new ProblemError('payload-too-large', `the response exceeds ${limit} bytes`);
    }
    chunks.push(buf);
  }
  return Buffer.concat(chunks, size);
}

/** Passes a stream through, failing it with payload-too-large once more than `limit` bytes went by. */
export function capStream(stream: Readable, limit: number): Readable {
  let size = 0;
  const capped = new Transform({
    transform(chunk: Buffer, _enc, cb): void {
      size += chunk.length;
      if (size > limit)
        cb(new ProblemError('payload-too-large', `the file exceeds the limit of ${limit} bytes`));
      else cb(null, chunk);
    },
  });
  stream.on('error', (err) => capped.destroy(err));
  capped.on('close', () => stream.destroy());
  return stream.pipe(capped);
}
