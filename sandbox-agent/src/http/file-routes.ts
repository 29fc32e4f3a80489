/** `PUT /v1/files/<path>` and `GET /v1/files/<path>`. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';

import type { FileStore } from '../files/file-store.js';
import { parseWorkspacePath } from '../files/workspace-path.js';
import { bodyChunks, checkDeclaredLength } from './body.js';
import { sendJson } from './problem.js';

/** URL prefix of the file routes. */
export const FILES_PREFIX = '/v1/files/';

/** Writes the request body to the file atomically; 201 `{path, size}`. */
export async function putFileRoute(
  req: IncomingMessage,
  res: ServerResponse,
  files: FileStore,
  limit: number,
): Promise<void> {
  const segments = parseWorkspacePath(pathTail(req));
  checkDeclaredLength(req, limit);
  const written = await files.write(segments, bodyChunks(req), limit);
  sendJson(res, 201, written);
}

/**
 * Streams exactly the `Content-Length` bytes announced from the size at open time. The file may
 * change meanwhile (the sandbox's processes write to it): bytes a growing file gained are not
 * sent (they would be read as the start of the next response on the keep-alive connection), and a
 * file that shrank ends the response by closing the connection, so the client sees a short body
 * instead of waiting for bytes that never come.
 */
export async function getFileRoute(
  req: IncomingMessage,
  res: ServerResponse,
  files: FileStore,
): Promise<void> {
  const { handle, size } = await files.read(parseWorkspacePath(pathTail(req)));
  res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': size });
  if (size === 0) {
    await handle.close();
    res.end();
    return;
  }
  // The read stream owns the handle and closes it, also when the client goes away mid-download.
  const stream = handle.createReadStream({ start: 0, end: size - 1 });
  let sent = 0;
  stream.on('data', (chunk: string | Buffer) => (sent += chunk.length));
  await pipeline(stream, res, { end: false });
  if (sent === size) res.end();
  else throw new FileChangedError(`the file shrank while it was sent (${sent} of ${size} bytes)`);
}

/** The file shrank during a GET: the response cannot be completed (the server cuts it). */
export class FileChangedError extends Error {
  override readonly name = 'FileChangedError';
}

function pathTail(req: IncomingMessage): string {
  const path = (req.url ?? '').split('?')[0] ?? '';
  return path.slice(FILES_PREFIX.length);
}
