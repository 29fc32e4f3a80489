/**
 * A restore's data path (docs/snapshots.md): the manifest is read and checked against the sha256
 * the snapshot's status records (the status is the trust anchor: only the operator writes it),
 * then every part is read whole, checked against the manifest's sha256, and only then sent to
 * the agent (one part prefetched while the previous one is sent), so bytes the bucket altered
 * never reach the workspace. The agent writes the archive and verifies the snapshot's digest
 * itself; a mismatch there empties the workspace.
 */
import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';

import { snapshotManifestKey, type ArchiveSummary, type SnapshotManifest } from '@sandbox-platform/api';

import type { AgentArchiveClient, AgentTarget } from './agent-archive.js';
import type { ObjectStore } from './s3-client.js';

/** Largest manifest read (a million parts of about 100 bytes each). */
const MAX_MANIFEST_BYTES = 128 * 1024 * 1024;

/** What a restore needs from the snapshot's status. */
export interface SnapshotRecord {
  readonly namespace: string;
  readonly uid: string;
  readonly digest: string;
  readonly manifestDigest: string;
}

/** An object of the snapshot is not what the manifest or the status says it is. */
export class SnapshotCorruptedError extends Error {
  override readonly name = 'SnapshotCorruptedError';
}

/** Reads and checks the manifest of a snapshot. */
export async function readManifest(store: ObjectStore, snap: SnapshotRecord): Promise<SnapshotManifest> {
  const key = snapshotManifestKey(snap.namespace, snap.uid);
  const bytes = await readWhole(store, key, MAX_MANIFEST_BYTES);
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  if (sha256 !== snap.manifestDigest)
    throw new SnapshotCorruptedError(
      `object ${key} has sha256 ${sha256}, the snapshot records ${snap.manifestDigest}`,
    );
  const manifest = JSON.parse(bytes.toString('utf8')) as SnapshotManifest;
  if (manifest.digest !== snap.digest || !Array.isArray(manifest.parts))
    throw new SnapshotCorruptedError(`the manifest ${key} does not describe digest ${snap.digest}`);
  return manifest;
}

/** A restore's copy: the agent's summary and where the time went. */
export interface CopyInResult {
  readonly summary: ArchiveSummary;
  /** From the first part's read to the agent's answer. */
  readonly durationMs: number;
  /**
   * Of that, the time the agent's request waited for a part still being read from the object
   * store and checked (the rest is the agent's: the network into the Pod, its writes and hashing).
   */
  readonly storeWaitMs: number;
}

/** Streams the snapshot into the agent; resolves with the agent's summary (its digest verified). */
export async function copyIn(input: {
  readonly store: ObjectStore;
  readonly agent: AgentArchiveClient;
  readonly target: AgentTarget;
  readonly snap: SnapshotRecord;
  readonly manifest: SnapshotManifest;
}): Promise<CopyInResult> {
  const { store, agent, target, snap, manifest } = input;
  const started = performance.now();
  const waited = { ms: 0 };
  const summary = await agent.restore(
    target,
    verifiedParts(store, manifest, waited),
    manifest.sizeBytes,
    snap.digest,
  );
  if (summary.digest !== snap.digest)
    throw new SnapshotCorruptedError(`the agent wrote ${summary.digest}, the snapshot is ${snap.digest}`);
  return { summary, durationMs: performance.now() - started, storeWaitMs: waited.ms };
}

/**
 * The parts' bytes in order, each checked before it is yielded; the next one is read meanwhile.
 * `waited.ms` adds up the time spent waiting for a part that was not read and checked yet.
 */
async function* verifiedParts(
  store: ObjectStore,
  manifest: SnapshotManifest,
  waited: { ms: number },
): AsyncGenerator<Buffer> {
  const parts = manifest.parts;
  let next = parts[0] ? fetchPart(store, parts[0]) : undefined;
  for (let i = 0; i < parts.length; i++) {
    const current = next;
    if (!current) break;
    const following = parts[i + 1];
    next = following ? fetchPart(store, following) : undefined;
    next?.catch(() => undefined); // awaited in its turn; never an unhandled rejection meanwhile
    const asked = performance.now();
    const bytes = await current;
    waited.ms += performance.now() - asked;
    yield bytes;
  }
}

async function fetchPart(store: ObjectStore, part: SnapshotManifest['parts'][number]): Promise<Buffer> {
  const bytes = await readWhole(store, part.key, part.size);
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  if (bytes.length !== part.size || sha256 !== part.sha256)
    throw new SnapshotCorruptedError(
      `object ${part.key} has ${bytes.length} bytes and sha256 ${sha256}; the manifest records ${part.size} and ${part.sha256}`,
    );
  return bytes;
}

/** An object's bytes, at most `max` (more is corruption: the object is not what was written). */
async function readWhole(store: ObjectStore, key: string, max: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of await store.get(key)) {
    size += chunk.length;
    if (size > max)
      throw new SnapshotCorruptedError(`object ${key} is larger than the ${max} bytes recorded`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}
