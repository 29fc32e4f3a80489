/**
 * A snapshot's data path (docs/snapshots.md): the archive stream of the session's agent is cut
 * into parts of `partBytes`, each part is hashed (its sha256 signs the PUT and goes into the
 * manifest) and written to the bucket while the next one fills, at most `inFlight` parts at once
 * (the agent's stream waits meanwhile: memory is bounded by (inFlight + 1) parts). The stream is
 * also parsed and hashed here (TarReader + TreeHasher): the snapshot is Ready only when the
 * operator's own digest of the bytes it stored equals the agent's claim in the trailer. The
 * manifest is written last: an interrupted copy leaves no manifest, and is never Ready.
 */
import { createHash } from 'node:crypto';

import {
  TarReader,
  TreeHasher,
  snapshotManifestKey,
  snapshotPartKey,
  type ArchiveSummary,
  type SnapshotManifest,
} from '@sandbox-platform/api';

import type { ObjectStore } from './s3-client.js';

/** What a copy needs. */
export interface CopyOutInput {
  readonly body: AsyncIterable<Buffer>;
  /** The agent's summary, readable once the body ended. */
  readonly summary: () => ArchiveSummary;
  readonly store: ObjectStore;
  readonly namespace: string;
  readonly uid: string;
  readonly partBytes: number;
  readonly inFlight: number;
  /** Largest archive allowed (the namespace's remaining byte quota). */
  readonly maxBytes: number;
  readonly signal?: AbortSignal;
}

/** What was stored. */
export interface CopyOutResult {
  readonly manifest: SnapshotManifest;
  /** sha256 (hex) of the manifest object's bytes. */
  readonly manifestSha256: string;
  readonly objects: number;
}

/** The archive is larger than the namespace may still store. */
export class SnapshotTooLargeError extends Error {
  override readonly name = 'SnapshotTooLargeError';
}

/** The operator's digest of the stream differs from the agent's claim, or the stream is malformed. */
export class ArchiveMismatchError extends Error {
  override readonly name = 'ArchiveMismatchError';
}

/** Copies the stream into the bucket; see the module comment. */
export async function copyOut(input: CopyOutInput): Promise<CopyOutResult> {
  const writes = new Set<Promise<void>>();
  try {
    return await copy(input, writes);
  } finally {
    // A failed copy returns only once no part is still being written, so that the caller's
    // clean-up of the prefix sees every object.
    await Promise.allSettled(writes);
  }
}

async function copy(input: CopyOutInput, writes: Set<Promise<void>>): Promise<CopyOutResult> {
  const reader = new TarReader();
  const hasher = new TreeHasher();
  const parts: Array<{ key: string; size: number; sha256: string }> = [];
  const state: { failed?: Error } = {};
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let total = 0;

  const flush = async (): Promise<void> => {
    if (pendingBytes === 0) return;
    const body = pending.length === 1 && pending[0] ? pending[0] : Buffer.concat(pending, pendingBytes);
    pending = [];
    pendingBytes = 0;
    const sha256 = createHash('sha256').update(body).digest('hex');
    const key = snapshotPartKey(input.namespace, input.uid, parts.length);
    parts.push({ key, size: body.length, sha256 });
    while (writes.size >= input.inFlight) await Promise.race(writes);
    if (state.failed) throw state.failed;
    const write = input.store.put(key, body, sha256).then(
      () => void writes.delete(write),
      (err: unknown) => {
        state.failed ??= err instanceof Error ? err : new Error(String(err));
        writes.delete(write);
      },
    );
    writes.add(write);
  };

  for await (const chunk of input.body) {
    input.signal?.throwIfAborted();
    if (state.failed) throw state.failed;
    total += chunk.length;
    if (total > input.maxBytes)
      throw new SnapshotTooLargeError(
        `the workspace archive exceeds the ${input.maxBytes} bytes the namespace may still store`,
      );
    for (const event of reader.push(chunk)) {
      if (event.kind === 'entry') hasher.add(event.entry);
      else if (event.kind === 'data') hasher.data(event.bytes);
    }
    pending.push(chunk);
    pendingBytes += chunk.length;
    if (pendingBytes >= input.partBytes) await flush();
  }
  reader.finish();
  const claimed = input.summary();
  const tree = hasher.finish();
  if (tree.digest !== claimed.digest || claimed.archiveBytes !== total)
    throw new ArchiveMismatchError(
      `the agent claimed ${claimed.digest} over ${claimed.archiveBytes} bytes; the operator read ${tree.digest} over ${total}`,
    );
  await flush();
  await Promise.all(writes);
  if (state.failed) throw state.failed;
  const manifest: SnapshotManifest = {
    version: 1,
    format: 'pax-tar',
    compression: 'none',
    digest: tree.digest,
    files: tree.files,
    directories: tree.directories,
    symlinks: tree.symlinks,
    skipped: claimed.skipped,
    sizeBytes: total,
    parts,
  };
  const bytes = Buffer.from(JSON.stringify(manifest));
  const manifestSha256 = createHash('sha256').update(bytes).digest('hex');
  await input.store.put(snapshotManifestKey(input.namespace, input.uid), bytes, manifestSha256);
  return { manifest, manifestSha256, objects: parts.length + 1 };
}
