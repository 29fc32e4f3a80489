/**
 * The archive routes (docs/snapshots.md): `GET /v1/archive` streams the workspace out as a tar
 * archive with its summary in the `sandbox-archive-summary` trailer; `GET /v1/archive/digest`
 * answers the summary only; `PUT /v1/archive?digest=...&maxBytes=...` replaces the workspace with
 * an archive and answers its summary once it verified (422 digest-mismatch, 400 archive-invalid,
 * 413 payload-too-large otherwise, the workspace emptied). One archive call runs at a time (409
 * archive-busy): two restores into one workspace, or a snapshot of a workspace being replaced,
 * would each see the other's half.
 *
 * The operator makes these calls with the session's token (it derives it from the master key);
 * the data never passes through the sandbox's own code.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';

import {
  ARCHIVE_CONTENT_TYPE,
  ARCHIVE_SUMMARY_TRAILER,
  archiveDigestRequestSchema,
  archiveRestoreQuerySchema,
  type ArchiveDigestRequest,
  type ArchiveRestoreQuery,
} from '@sandbox-platform/api';
import { Ajv } from 'ajv';

import { readAhead, readJson } from '../http/body.js';
import { HttpProblem, sendJson } from '../http/problem.js';
import { validated, validatedQuery } from '../http/validate.js';
import type { Logger } from '../log.js';
import { archiveWorkspace } from './archive-out.js';
import { restoreWorkspace } from './archive-in.js';

/** What the routes need. */
export interface ArchiveDeps {
  /** The real path of the workspace. */
  readonly workspace: string;
  readonly lock: ArchiveLock;
  readonly logger: Logger;
}

const ajv = new Ajv({ strict: true, allErrors: false, coerceTypes: false });
const validateDigestRequest = ajv.compile<ArchiveDigestRequest>(archiveDigestRequestSchema);
const validateRestoreQuery = ajv.compile<ArchiveRestoreQuery>(archiveRestoreQuerySchema);

/** Largest `POST /v1/archive/digest` body. */
const DIGEST_BODY_BYTES = 1024;

/**
 * One archive call at a time; `quiesce` stops what could change the workspace behind a digest
 * taken before a suspension (background processes, terminals, code kernels).
 */
export class ArchiveLock {
  private busy = false;

  constructor(readonly quiesce: () => Promise<void> = () => Promise.resolve()) {}

  /** Runs `work` holding the lock; 409 archive-busy when another call holds it. */
  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.busy) throw new HttpProblem('archive-busy', 'another archive call is running in this workspace');
    this.busy = true;
    try {
      return await work();
    } finally {
      this.busy = false;
    }
  }
}

/** `GET /v1/archive`. */
export async function getArchiveRoute(
  req: IncomingMessage,
  res: ServerResponse,
  deps: ArchiveDeps,
): Promise<void> {
  await deps.lock.run(async () => {
    const gone = new AbortController();
    res.once('close', () => gone.abort(new Error('the client went away')));
    res.writeHead(200, {
      'content-type': ARCHIVE_CONTENT_TYPE,
      trailer: ARCHIVE_SUMMARY_TRAILER,
      'cache-control': 'no-store',
    });
    const sink = (bytes: Buffer): Promise<void> => {
      if (res.destroyed) return Promise.reject(new Error('the client went away'));
      if (res.write(bytes)) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const onDrain = (): void => {
          res.off('close', onClose);
          resolve();
        };
        const onClose = (): void => {
          res.off('drain', onDrain);
          reject(new Error('the client went away'));
        };
        res.once('drain', onDrain);
        res.once('close', onClose);
      });
    };
    const started = Date.now();
    // A failure after the headers cuts the connection (server.ts): no trailer, so the client
    // knows the archive is incomplete.
    const summary = await archiveWorkspace(deps.workspace, sink, gone.signal);
    res.addTrailers({ [ARCHIVE_SUMMARY_TRAILER]: JSON.stringify(summary) });
    res.end();
    deps.logger.info('workspace archived', { ...summary, durationMs: Date.now() - started });
  });
}

/** `GET /v1/archive/digest`. */
export async function getDigestRoute(
  _req: IncomingMessage,
  res: ServerResponse,
  deps: ArchiveDeps,
): Promise<void> {
  const summary = await deps.lock.run(() => archiveWorkspace(deps.workspace, undefined));
  sendJson(res, 200, summary);
}

/** `POST /v1/archive/digest` `{quiesce?}`: the digest, after quiescing when asked. */
export async function postDigestRoute(
  req: IncomingMessage,
  res: ServerResponse,
  deps: ArchiveDeps,
): Promise<void> {
  const body = validated(validateDigestRequest, await readJson(req, DIGEST_BODY_BYTES));
  const summary = await deps.lock.run(async () => {
    if (body.quiesce) {
      await deps.lock.quiesce();
      deps.logger.info(
        'workspace quiesced for a digest: background processes, terminals and kernels stopped',
      );
    }
    return archiveWorkspace(deps.workspace, undefined);
  });
  sendJson(res, 200, summary);
}

/** How much of an archive being restored is read from the network ahead of the writes. */
const READ_AHEAD_BYTES = 16 * 1024 * 1024;

/** `PUT /v1/archive`. */
export async function putArchiveRoute(
  req: IncomingMessage,
  res: ServerResponse,
  deps: ArchiveDeps,
): Promise<void> {
  const search = new URL(req.url ?? '/', 'http://agent').searchParams;
  const query = validatedQuery(validateRestoreQuery, archiveRestoreQuerySchema, search);
  const maxBytes = query.maxBytes ?? Number.MAX_SAFE_INTEGER;
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > maxBytes)
    throw new HttpProblem('payload-too-large', `the archive is ${declared} bytes, the limit is ${maxBytes}`);
  await deps.lock.run(async () => {
    const started = performance.now();
    const body = { chunks: 0, waitedMs: 0 };
    const summary = await restoreWorkspace(deps.workspace, counted(readAhead(req, READ_AHEAD_BYTES), body), {
      digest: query.digest,
      maxBytes,
    });
    // Where a restore's time went: waiting for the archive (the sender and the network) or
    // writing and hashing it here (the rest).
    deps.logger.info('workspace restored', {
      ...summary,
      durationMs: Math.round(performance.now() - started),
      waitedMs: Math.round(body.waitedMs),
      chunks: body.chunks,
    });
    sendJson(res, 200, summary);
  });
}

/** The body's chunks, counted, with the time spent waiting for each added to `into.waitedMs`. */
async function* counted(
  chunks: AsyncIterable<Buffer>,
  into: { chunks: number; waitedMs: number },
): AsyncGenerator<Buffer> {
  const it = chunks[Symbol.asyncIterator]();
  try {
    for (;;) {
      const asked = performance.now();
      const next = await it.next();
      into.waitedMs += performance.now() - asked;
      if (next.done) return;
      into.chunks++;
      yield next.value;
    }
  } finally {
    // A restore that stopped early ends the body's iteration as a for-await over it would.
    await it.return?.();
  }
}
