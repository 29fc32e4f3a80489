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
