/**
 * The console's static files (built by console/scripts/build.mjs), read once at start and served
 * from memory: three small files, so no static-file plugin and no file system access per request.
 * index.html is a template: each answer gets a fresh CSP nonce in place of NONCE_PLACEHOLDER.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';

/** Marks where index.html takes the answer's nonce. */
export const NONCE_PLACEHOLDER = '__CSP_NONCE__';

/** One static file. */
export interface StaticFile {
  body: Buffer;
  contentType: string;
  /** Strong validator: a hash of the bytes. */
  etag: string;
  /** The same bytes gzipped once at start (served to clients that accept gzip), with its own ETag. */
  gzip: { body: Buffer; etag: string };
}

/** What /console serves. */
export interface ConsoleAssets {
  /** index.html with NONCE_PLACEHOLDER. */
  indexTemplate: string;
  /** The other files, by name (console.js, console.css). */
  files: ReadonlyMap<string, StaticFile>;
}

/** Files of the build and their content types. */
const FILES: Readonly<Record<string, string>> = {
  'console.js': 'text/javascript; charset=utf-8',
  'console.css': 'text/css; charset=utf-8',
};

/** A static file of these bytes. */
export function staticFile(body: Buffer, contentType: string): StaticFile {
  const hash = createHash('sha256').update(body).digest('base64url').slice(0, 27);
  return {
    body,
    contentType,
    etag: `"${hash}"`,
    gzip: { body: gzipSync(body, { level: 9 }), etag: `"${hash}-gz"` },
  };
}

/** Assets from in-memory texts (tests, and loadConsoleAssets). */
export function consoleAssets(index: string, files: Record<string, string | Buffer>): ConsoleAssets {
  if (!index.includes(NONCE_PLACEHOLDER)) throw new Error(`console: index.html has no ${NONCE_PLACEHOLDER}`);
  const map = new Map<string, StaticFile>();
  for (const [name, type] of Object.entries(FILES)) {
    const body = files[name];
    if (body === undefined) throw new Error(`console: ${name} is missing`);
    map.set(name, staticFile(Buffer.from(body), type));
  }
  return { indexTemplate: index, files: map };
}

/** Reads the built console from `dir` (throws naming a missing file: the gateway does not start). */
export function loadConsoleAssets(dir: string): ConsoleAssets {
  const read = (name: string): Buffer => {
    try {
      return readFileSync(join(dir, name));
    } catch (cause) {
      throw new Error(`console: cannot read ${join(dir, name)} (GATEWAY_CONSOLE_DIR)`, { cause });
    }
  };
  const files: Record<string, Buffer> = {};
  for (const name of Object.keys(FILES)) files[name] = read(name);
  return consoleAssets(read('index.html').toString('utf8'), files);
}

/** index.html for one answer. */
export function renderIndex(assets: ConsoleAssets, nonce: string): string {
  return assets.indexTemplate.replaceAll(NONCE_PLACEHOLDER, nonce);
}
