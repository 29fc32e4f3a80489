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

/** Streams the file's bytes. */
export async function getFileRoute(
  req: IncomingMessage,
  res: ServerResponse,
  files: FileStore,
): Promise<void> {
  const { handle, size } = await files.read(parseWorkspacePath(pathTail(req)));
  res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': size });
  // The read stream owns the handle and closes it, also when the client goes away mid-download.
  await pipeline(handle.createReadStream(), res);
}

function pathTail(req: IncomingMessage): string {
  const path = (req.url ?? '').split('?')[0] ?? '';
  return path.slice(FILES_PREFIX.length);
}
