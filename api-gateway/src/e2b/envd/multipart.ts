/**
 * The file parts of a multipart/form-data upload (envd's POST /files), one at a time, each a
 * stream: a part's bytes go to the sandbox as they arrive and the next part is not read before
 * the previous one was written, so nothing is held whole. Bounded: at most `maxFiles` parts, each
 * at most `maxFileBytes` (past it the part's stream fails with 400), and small headers.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { Transform, type Readable, type TransformCallback } from 'node:stream';

import { Busboy } from '@fastify/busboy';

import { ProblemError } from '../../errors.js';

/** One file part: its file name (the sandbox path with E2B's SDKs) and its bytes. */
export interface FilePart {
  filename: string;
  stream: Readable;
}

/** Bounds of an upload. */
export interface MultipartLimits {
  maxFileBytes: number;
  maxFiles: number;
}

/** Fails a stream with payload-too-large once more than `limit` bytes went through. */
export class ByteLimit extends Transform {
  private size = 0;
  constructor(private readonly limit: number) {
    super();
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.size += chunk.length;
    if (this.size > this.limit) cb(tooLarge(this.limit));
    else cb(null, chunk);
  }
}

/** The problem of a file over the limit (400: the SDKs report InvalidArgumentError). */
export function tooLarge(limit: number): ProblemError {
  return new ProblemError('invalid-request', `the file exceeds the upload limit of ${limit} bytes`);
}

type Waiter = { resolve: (p: FilePart | undefined) => void; reject: (err: Error) => void };

/** Yields the file parts of `body` in order; throws on a malformed body or a broken limit. */
export async function* fileParts(
  body: Readable,
  headers: IncomingHttpHeaders,
  limits: MultipartLimits,
): AsyncGenerator<FilePart> {
  const queue: FilePart[] = [];
  let waiter: Waiter | undefined;
  let failure: Error | undefined;
  let finished = false;
  const wake = (): void => {
    const w = waiter;
    waiter = undefined;
    if (!w) return;
    if (failure) w.reject(failure);
    else if (queue.length > 0) w.resolve(queue.shift());
    else if (finished) w.resolve(undefined);
    else waiter = w;
  };
  const fail = (err: Error): void => {
    failure ??= err;
    wake();
  };
  let bb;
  try {
    bb = Busboy({
      headers: headers as { 'content-type': string },
      preservePath: true,
      limits: {
        fileSize: limits.maxFileBytes,
        files: limits.maxFiles,
        fields: 16,
        fieldSize: 4096,
        headerPairs: 32,
      },
    });
  } catch (err) {
    throw new ProblemError('invalid-request', `malformed multipart upload: ${(err as Error).message}`);
  }
  bb.on('file', (_field, stream, filename) => {
    // The part's error reaches its reader (and the upload fails); a part nobody reads yet must not
    // crash the process with an unhandled 'error' event.
    stream.on('error', () => undefined);
    stream.once('limit', () => {
      const err = tooLarge(limits.maxFileBytes);
      stream.destroy(err);
      fail(err);
    });
    queue.push({ filename, stream });
    wake();
  });
  bb.on('filesLimit', () =>
    fail(new ProblemError('invalid-request', `at most ${limits.maxFiles} files per upload`)),
  );
  bb.on('error', (err) =>
    fail(
      new ProblemError(
        'invalid-request',
        `malformed multipart upload: ${String((err as Error).message ?? err)}`,
      ),
    ),
  );
  bb.on('finish', () => {
    finished = true;
    wake();
  });
  body.on('error', (err) => fail(err));
  body.pipe(bb);
  for (;;) {
    const part = await new Promise<FilePart | undefined>((resolve, reject) => {
      waiter = { resolve, reject };
      wake();
    });
    if (!part) return;
    yield part;
    // The consumer must have read the part; one it left is drained so the next one can come.
    part.stream.resume();
  }
}
