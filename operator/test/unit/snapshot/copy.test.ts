/**
 * The data path of snapshots (copy-out.ts) and restores (copy-in.ts) against an in-memory bucket:
 * parts, manifest written last, the operator's own digest checked against the agent's claim,
 * every part verified before it reaches the agent, failures that leave no manifest.
 */
import { describe, expect, it } from '@jest/globals';
import {
  TarReader,
  TreeHasher,
  snapshotManifestKey,
  snapshotPartKey,
  type ArchiveSummary,
} from '@sandbox-platform/api';

import type { AgentArchiveClient } from '../../../src/snapshot/agent-archive.js';
import { SnapshotCorruptedError, copyIn, readManifest } from '../../../src/snapshot/copy-in.js';
import { ArchiveMismatchError, SnapshotTooLargeError, copyOut } from '../../../src/snapshot/copy-out.js';
import { StoreError } from '../../../src/snapshot/s3-client.js';
import { MemoryStore, archiveOf, chunks, sampleTree } from './fakes.js';

const NS = 'team-a';
const UID = 'snap-uid';

/** An agent that hashes what it receives as the real one does (TarReader + TreeHasher). */
function receivingAgent(received: Buffer[]): AgentArchiveClient {
  return {
    archive: () => Promise.reject(new Error('not used')),
    digest: () => Promise.reject(new Error('not used')),
    restore: async (_target, body, size, digest) => {
      const reader = new TarReader();
      const h = new TreeHasher();
      for await (const chunk of body) {
        received.push(chunk);
        for (const ev of reader.push(chunk)) {
          if (ev.kind === 'entry') h.add(ev.entry);
          else if (ev.kind === 'data') h.data(ev.bytes);
        }
      }
      reader.finish();
      const t = h.finish();
      expect(reader.bytes).toBe(size);
      if (t.digest !== digest) throw new Error('digest-mismatch');
      const summary: ArchiveSummary = { ...t, skipped: 0, archiveBytes: size };
      return summary;
    },
  };
}

async function snapshot(store: MemoryStore, bytes: Buffer, summary: ArchiveSummary, maxBytes = 1e12) {
  return copyOut({
    body: chunks(bytes),
    summary: () => summary,
    store,
    namespace: NS,
    uid: UID,
    partBytes: 1_000_000,
    inFlight: 2,
    maxBytes,
  });
}

describe('copyOut and copyIn', () => {
  const { bytes, summary } = archiveOf(sampleTree());

  it('stores the archive in parts and the manifest last, and restores exactly those bytes', async () => {
    const store = new MemoryStore();
    const result = await snapshot(store, bytes, summary);
    expect(result.manifest.parts.length).toBeGreaterThanOrEqual(3);
    expect(result.objects).toBe(result.manifest.parts.length + 1);
    expect(result.manifest).toMatchObject({
      digest: summary.digest,
      files: 2,
      directories: 2,
      symlinks: 1,
      sizeBytes: bytes.length,
    });
    expect([...store.objects.keys()].at(-1)).toBe(snapshotManifestKey(NS, UID));
    expect(store.objects.get(snapshotPartKey(NS, UID, 0))?.length).toBeGreaterThanOrEqual(1_000_000);
    const record = { namespace: NS, uid: UID, digest: summary.digest, manifestDigest: result.manifestSha256 };
    const manifest = await readManifest(store, record);
    const received: Buffer[] = [];
    const back = await copyIn({
      store,
      agent: receivingAgent(received),
      target: { podIP: 'x', token: 't' },
      snap: record,
      manifest,
    });
    expect(back.summary.digest).toBe(summary.digest);
    // The store's share is part of the whole, both measured.
    expect(back.storeWaitMs).toBeGreaterThanOrEqual(0);
    expect(back.storeWaitMs).toBeLessThanOrEqual(back.durationMs);
    expect(Buffer.concat(received).equals(bytes)).toBe(true);
  });

  it("counts the time spent waiting for the object store as the store's share of the copy", async () => {
    const store = new MemoryStore();
    const result = await snapshot(store, bytes, summary);
    const record = { namespace: NS, uid: UID, digest: summary.digest, manifestDigest: result.manifestSha256 };
    const manifest = await readManifest(store, record);
    // Every read of the bucket now takes at least 25 ms before its first byte; the first part
    // cannot have been read ahead, so the copy waited at least that long for the store.
    const slow = Object.assign(Object.create(store) as MemoryStore, {
      get: async (key: string) => {
        await new Promise((r) => setTimeout(r, 25));
        return store.get(key);
      },
    });
    const back = await copyIn({
      store: slow,
      agent: receivingAgent([]),
      target: { podIP: 'x', token: 't' },
      snap: record,
      manifest,
    });
    expect(back.storeWaitMs).toBeGreaterThanOrEqual(24);
    expect(back.durationMs).toBeGreaterThanOrEqual(back.storeWaitMs);
  });

  it('refuses a part the bucket altered before any of its bytes reach the agent', async () => {
    const store = new MemoryStore();
    const result = await snapshot(store, bytes, summary);
    const key = snapshotPartKey(NS, UID, 1);
    const altered = Buffer.from(store.objects.get(key) ?? Buffer.alloc(0));
    altered[100] = (altered[100] ?? 0) ^ 0xff;
    store.objects.set(key, altered);
    const record = { namespace: NS, uid: UID, digest: summary.digest, manifestDigest: result.manifestSha256 };
    const received: Buffer[] = [];
    const run = copyIn({
      store,
      agent: receivingAgent(received),
      target: { podIP: 'x', token: 't' },
      snap: record,
      manifest: await readManifest(store, record),
    });
    await expect(run).rejects.toThrow(SnapshotCorruptedError);
    // Only part 0 (verified) was sent; the altered part 1 never was.
    expect(Buffer.concat(received).length).toBe(store.objects.get(snapshotPartKey(NS, UID, 0))!.length);
  });

  it('refuses a manifest that is not the one the status records', async () => {
    const store = new MemoryStore();
    const result = await snapshot(store, bytes, summary);
    const key = snapshotManifestKey(NS, UID);
    store.objects.set(key, Buffer.from(store.objects.get(key)!.toString().replace('"files":2', '"files":3')));
    const record = { namespace: NS, uid: UID, digest: summary.digest, manifestDigest: result.manifestSha256 };
    await expect(readManifest(store, record)).rejects.toThrow(SnapshotCorruptedError);
  });

  it('fails when the agent claims another digest than the bytes it sent hash to; no manifest', async () => {
    const store = new MemoryStore();
    const lie = { ...summary, digest: `sha256:${'a'.repeat(64)}` };
    await expect(snapshot(store, bytes, lie)).rejects.toThrow(ArchiveMismatchError);
    expect(store.objects.has(snapshotManifestKey(NS, UID))).toBe(false);
  });

  it('fails past the namespace byte quota; no manifest', async () => {
    const store = new MemoryStore();
    await expect(snapshot(store, bytes, summary, 2_000_000)).rejects.toThrow(SnapshotTooLargeError);
    expect(store.objects.has(snapshotManifestKey(NS, UID))).toBe(false);
  });

  it('fails with the store error when the store goes away mid-copy, after the writes settled; no manifest', async () => {
    const store = new MemoryStore();
    store.failPutsFrom = 2;
    await expect(snapshot(store, bytes, summary)).rejects.toThrow(StoreError);
    expect(store.objects.has(snapshotManifestKey(NS, UID))).toBe(false);
  });

  it('fails on a stream cut short (no end of archive)', async () => {
    const store = new MemoryStore();
    await expect(snapshot(store, bytes.subarray(0, bytes.length - 2000), summary)).rejects.toThrow(
      /cut short/,
    );
  });
});
