/**
 * The workspace archive's part of the agent's wire contract (docs/snapshots.md): the operator
 * streams a workspace out (`GET /v1/archive`: the tar stream, its summary in a trailer), writes
 * one in (`PUT /v1/archive`: the workspace is replaced and verified), or asks for the digest only
 * (`GET /v1/archive/digest`). Schemas follow ./schemas.ts and are listed in its WIRE_SCHEMAS.
 */

/** Content type of an archive body (POSIX pax tar, ./archive.ts). */
export const ARCHIVE_CONTENT_TYPE = 'application/x-tar';

/**
 * HTTP trailer of `GET /v1/archive` carrying the {@link archiveSummarySchema} of what was streamed
 * (JSON on one line). A response without it was cut: the archive is not complete.
 */
export const ARCHIVE_SUMMARY_TRAILER = 'sandbox-archive-summary';

/** Longest summary (trailer or body): a few numbers and a digest. */
export const ARCHIVE_SUMMARY_MAX_BYTES = 4096;

const count = { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER } as const;
const digest = { type: 'string', pattern: '^sha256:[0-9a-f]{64}$' } as const;

/** What an archive holds: its digest and counts. */
export const archiveSummarySchema = {
  type: 'object',
  description:
    'A workspace as archived, restored or hashed: its digest (docs/snapshots.md) and what it holds.',
  additionalProperties: false,
  required: ['digest', 'files', 'directories', 'symlinks', 'skipped', 'contentBytes', 'archiveBytes'],
  properties: {
    digest: { ...digest, description: 'Merkle root over paths, modes, symlink targets and bytes' },
    files: { ...count, description: 'Regular files' },
    directories: { ...count, description: 'Directories (the workspace itself not counted)' },
    symlinks: { ...count, description: 'Symbolic links (kept as links, never followed)' },
    skipped: { ...count, description: 'Sockets, FIFOs and devices left out' },
    contentBytes: { ...count, description: 'Bytes of file content' },
    archiveBytes: { ...count, description: 'Bytes of the tar stream (0 for a digest only)' },
  },
} as const;

/** `PUT /v1/archive` query. */
export const archiveRestoreQuerySchema = {
  type: 'object',
  description: '`PUT /v1/archive` query.',
  additionalProperties: false,
  required: ['digest'],
  properties: {
    digest: {
      ...digest,
      description:
        'The digest the written workspace must have; on a mismatch the workspace is emptied and the answer is 422 digest-mismatch',
    },
    maxBytes: {
      type: 'integer',
      minimum: 0,
      maximum: Number.MAX_SAFE_INTEGER,
      description: 'Largest archive accepted (413 payload-too-large beyond; the workspace is emptied)',
    },
  },
} as const;

/** `POST /v1/archive/digest` body. */
export const archiveDigestRequestSchema = {
  type: 'object',
  description: '`POST /v1/archive/digest` body: the digest, taken after quiescing when asked.',
  additionalProperties: false,
  properties: {
    quiesce: {
      type: 'boolean',
      description:
        'Stop background processes, terminals and code kernels first (the session is being suspended: they end with its Pod anyway), so that they cannot change the workspace after the digest',
    },
  },
} as const;
