/**
 * The operator's archive calls to a session's agent (docs/snapshots.md): stream the workspace out
 * (`GET /v1/archive`, summary in a trailer), write one in (`PUT /v1/archive`), ask for the digest
 * (`GET /v1/archive/digest`). Plain HTTP to the Pod IP on the agent port with the session token,
 * as the bind client; the socket may be idle at most `idleTimeoutMs`; the answers the operator
 * reads whole are bounded and validated against the wire contract's schema. The token never
 * reaches a log or an error.
 */
import { request, type IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

import {
  AGENT_PATHS,
  ARCHIVE_CONTENT_TYPE,
  ARCHIVE_SUMMARY_MAX_BYTES,
  ARCHIVE_SUMMARY_TRAILER,
  PROBLEM_BASE,
  archiveSummarySchema,
  type ArchiveSummary,
} from '@sandbox-platform/api';
import { Ajv } from 'ajv';

/** Where the agent is and how to reach it. */
export interface AgentTarget {
  readonly podIP: string;
  readonly token: string;
}

/** An archive call failed; `slug` is the agent's problem slug, or `unreachable`/`malformed`. */
export class AgentArchiveError extends Error {
  override readonly name = 'AgentArchiveError';
  constructor(
    readonly slug: string,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** The calls (a narrow port: tests use real agents or fakes). */
export interface AgentArchiveClient {
  /** The workspace as a tar stream; `summary()` is the trailer, once the stream ended. */
  archive(target: AgentTarget): Promise<{ body: AsyncIterable<Buffer>; summary: () => ArchiveSummary }>;
  /** Replaces the workspace with `size` bytes of archive and verifies `digest`. */
  restore(
    target: AgentTarget,
    body: AsyncIterable<Buffer>,
    size: number,
    digest: string,
  ): Promise<ArchiveSummary>;
  /**
   * The workspace's digest and counts; with `quiesce`, after the agent stopped background
   * processes, terminals and kernels (before a suspension).
   */
  digest(target: AgentTarget, quiesce?: boolean): Promise<ArchiveSummary>;
}

/** Client settings. */
export interface AgentArchiveOptions {
  readonly port: number;
  /** Longest the socket may be idle (a digest of a large workspace answers only at its end). */
  readonly idleTimeoutMs: number;
}

const validSummary = new Ajv({ strict: true, allErrors: false }).compile<ArchiveSummary>(
  archiveSummarySchema,
);

/** The client over node:http. */
export function createAgentArchiveClient(opts: AgentArchiveOptions): AgentArchiveClient {
  const open = (
    target: AgentTarget,
    method: 'GET' | 'PUT' | 'POST',
    path: string,
    headers: Record<string, string>,
  ) =>
    request({
      host: target.podIP,
      port: opts.port,
      method,
      path,
      agent: false,
      timeout: opts.idleTimeoutMs,
      headers: { ...headers, authorization: `Bearer ${target.token}` },
    });
  return {
    archive: async (target) => {
      const req = open(target, 'GET', AGENT_PATHS.archive, {});
      const res = await answer(req, opts.idleTimeoutMs);
      if (res.statusCode !== 200) throw await problemOf(res);
      return {
        body: res as AsyncIterable<Buffer>,
        summary: () => {
          const text = res.trailers[ARCHIVE_SUMMARY_TRAILER];
          if (!text)
            throw new AgentArchiveError('malformed', 'the archive stream ended without its summary (cut)');
          return parseSummary(text);
        },
      };
    },
    restore: async (target, body, size, digest) => {
      const path = `${AGENT_PATHS.archive}?digest=${encodeURIComponent(digest)}&maxBytes=${size}`;
      const req = open(target, 'PUT', path, {
        'content-type': ARCHIVE_CONTENT_TYPE,
        'content-length': String(size),
      });
      const answered = answer(req, opts.idleTimeoutMs);
      const sent = pipeline(Readable.from(body, { objectMode: false }), req).catch((err: unknown) => {
        req.destroy();
        throw err;
      });
      // The agent may answer (and refuse) before the body is sent: the answer decides.
      const res = await Promise.race([answered, sent.then(() => answered)]);
      if (res.statusCode !== 200) {
        sent.catch(() => undefined);
        throw await problemOf(res);
      }
      await sent;
      return parseSummary((await readSmall(res)).toString('utf8'));
    },
    digest: async (target, quiesce = false) => {
      const body = JSON.stringify({ quiesce });
      const req = open(target, 'POST', AGENT_PATHS.archiveDigest, {
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
      });
      req.end(body);
      const res = await answer(req, opts.idleTimeoutMs);
      if (res.statusCode !== 200) throw await problemOf(res);
      return parseSummary((await readSmall(res)).toString('utf8'));
    },
  };
}

function answer(req: ReturnType<typeof request>, idleMs: number): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    req.on('timeout', () =>
      req.destroy(new AgentArchiveError('unreachable', `the agent was idle for ${idleMs} ms`)),
    );
    req.on('error', (err) =>
      reject(
        err instanceof AgentArchiveError
          ? err
          : new AgentArchiveError(
              'unreachable',
              `the agent did not answer: ${(err as NodeJS.ErrnoException).code ?? err.message}`,
            ),
      ),
    );
    req.on('response', (res: IncomingMessage) => {
      res.setTimeout(idleMs, () =>
        res.destroy(new AgentArchiveError('unreachable', `the agent stream stalled for ${idleMs} ms`)),
      );
      resolve(res);
    });
    if (req.method === 'GET') req.end();
  });
}

function parseSummary(text: string): ArchiveSummary {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new AgentArchiveError('malformed', 'the archive summary is not JSON', { cause: err });
  }
  if (!validSummary(value))
    throw new AgentArchiveError('malformed', 'the archive summary does not match its schema');
  return value;
}

async function problemOf(res: IncomingMessage): Promise<AgentArchiveError> {
  const body = await readSmall(res).catch(() => Buffer.alloc(0));
  let slug = `http-${res.statusCode ?? 0}`;
  let detail = '';
  try {
    const problem = JSON.parse(body.toString('utf8')) as { type?: unknown; detail?: unknown };
    if (typeof problem.type === 'string' && problem.type.startsWith(PROBLEM_BASE))
      slug = problem.type.slice(PROBLEM_BASE.length);
    if (typeof problem.detail === 'string') detail = problem.detail.slice(0, 512);
  } catch {
    // not a problem document: the status says enough
  }
  return new AgentArchiveError(
    slug,
    `the agent answered ${res.statusCode ?? 0} ${slug}${detail ? `: ${detail}` : ''}`,
  );
}

async function readSmall(res: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > ARCHIVE_SUMMARY_MAX_BYTES) {
      res.destroy();
      throw new AgentArchiveError('malformed', 'the agent answer is too large');
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}
