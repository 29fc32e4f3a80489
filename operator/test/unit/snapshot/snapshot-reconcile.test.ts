/**
 * reconcileSnapshot with fakes: the finalizer comes first; a Ready session's workspace is copied
 * (InProgress, then Ready with the digest); failures get their stable reasons; quotas; the session
 * must be Ready on a Pod exactly its own; deletion deletes every object, then the finalizer; TTL.
 */
import { describe, expect, it } from '@jest/globals';
import {
  SNAPSHOT_FINALIZER,
  snapshotManifestKey,
  type SandboxSession,
  type SandboxSnapshotStatus,
} from '@sandbox-platform/api';

import type { PodView } from '../../../src/state/views.js';
import type { AgentArchiveClient } from '../../../src/snapshot/agent-archive.js';
import type { CopyOutResult } from '../../../src/snapshot/copy-out.js';
import type { SnapshotDeps } from '../../../src/snapshot/snapshot-deps.js';
import type { SnapshotView, SnapshotWriter } from '../../../src/snapshot/snapshot-kube.js';
import { reconcileSnapshot } from '../../../src/snapshot/snapshot-reconcile.js';
import { Tasks } from '../../../src/snapshot/tasks.js';
import { podView, ready } from '../../fixtures/pods.js';
import { session, withStatus } from '../../fixtures/sessions.js';
import { MemoryStore, archiveOf, chunks, sampleTree } from './fakes.js';

const NOW = new Date('2030-01-01T00:05:00Z');

function snap(over: Partial<SnapshotView['metadata']> = {}, status?: SandboxSnapshotStatus): SnapshotView {
  return {
    metadata: {
      name: 's1',
      namespace: 'team-a',
      uid: 'snap-1',
      resourceVersion: '1',
      generation: 1,
      createdAt: '2030-01-01T00:04:00Z',
      finalizers: [SNAPSHOT_FINALIZER],
      ...over,
    },
    spec: { sessionRef: { name: 'demo' } },
    status,
  };
}

const readySession = session(
  withStatus({
    podName: 'sbs-demo',
    conditions: [
      {
        type: 'Ready',
        status: 'True',
        reason: 'SandboxReady',
        message: '',
        lastTransitionTime: '2030-01-01T00:00:00Z',
      },
    ],
  }),
);

interface World {
  deps: SnapshotDeps;
  store: MemoryStore;
  views: Map<string, SnapshotView>;
  writes: string[];
  settled: Promise<void>;
}

function world(
  views: SnapshotView[],
  over: {
    session?: SandboxSession;
    pod?: PodView;
    agent?: AgentArchiveClient;
    store?: MemoryStore | null;
    limits?: Partial<SnapshotDeps['limits']>;
  } = {},
): World {
  const map = new Map(views.map((v) => [`${v.metadata.namespace}/${v.metadata.name}`, v]));
  const writes: string[] = [];
  let settle: () => void = () => undefined;
  const settled = new Promise<void>((resolve) => (settle = resolve));
  const bump = (v: SnapshotView, change: Partial<SnapshotView>): void => {
    const next = {
      ...v,
      ...change,
      metadata: {
        ...v.metadata,
        ...change.metadata,
        resourceVersion: String(Number(v.metadata.resourceVersion) + 1),
      },
    };
    map.set(`${v.metadata.namespace}/${v.metadata.name}`, next);
  };
  const writer: SnapshotWriter = {
    patchStatus: (v, status) => {
      writes.push(`status ${status.phase} ${status.conditions?.[0]?.reason}`);
      bump(v, { status });
      return Promise.resolve();
    },
    setFinalizers: (v, finalizers) => {
      writes.push(`finalizers ${finalizers.join(',')}`);
      bump(v, { metadata: { ...v.metadata, finalizers } });
      return Promise.resolve();
    },
    delete: (v) => {
      writes.push(`delete ${v.metadata.name}`);
      return Promise.resolve();
    },
  };
  const { bytes, summary } = archiveOf(sampleTree(500_000));
  const agent: AgentArchiveClient = over.agent ?? {
    archive: () => Promise.resolve({ body: chunks(bytes), summary: () => summary }),
    restore: () => Promise.reject(new Error('unused')),
    digest: () => Promise.reject(new Error('unused')),
  };
  const store = over.store === null ? undefined : (over.store ?? new MemoryStore());
  const deps: SnapshotDeps = {
    snapshots: {
      get: (ns, n) => map.get(`${ns}/${n}`),
      inNamespace: (ns) => [...map.values()].filter((v) => v.metadata.namespace === ns),
    },
    writer,
    store,
    agent,
    session: (_ns, name) => Promise.resolve(name === 'demo' ? (over.session ?? readySession) : undefined),
    pod: (_ns, name) => (name === 'sbs-demo' ? (over.pod ?? podView(ready)) : undefined),
    masterKey: Buffer.alloc(32, 1),
    tasks: new Tasks<CopyOutResult>(() => settle()),
    events: { record: () => undefined },
    now: () => NOW,
    limits: {
      maxPerNamespace: 5,
      maxBytesPerNamespace: 1e9,
      partBytes: 100_000,
      partsInFlight: 2,
      concurrency: 2,
      sessionWaitMs: 60_000,
      ...over.limits,
    },
    logger: { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined },
  };
  return { deps, store: store ?? new MemoryStore(), views: map, writes, settled };
}

const current = (w: World): SnapshotView => w.views.get('team-a/s1')!;
const reason = (w: World): string | undefined => current(w).status?.conditions?.[0]?.reason;

describe('reconcileSnapshot', () => {
  it('adds its finalizer before anything else', async () => {
    const w = world([snap({ finalizers: [] })]);
    await reconcileSnapshot('team-a', 's1', w.deps);
    expect(w.writes).toEqual([`finalizers ${SNAPSHOT_FINALIZER}`]);
    expect(w.store.objects.size).toBe(0);
  });

  it('copies a Ready session: InProgress, then Ready with digest, sizes and the manifest', async () => {
    const w = world([snap()]);
    await reconcileSnapshot('team-a', 's1', w.deps);
    expect(current(w).status).toMatchObject({ phase: 'InProgress', sessionUID: 'uid-1' });
    await w.settled;
    await reconcileSnapshot('team-a', 's1', w.deps);
    const status = current(w).status!;
    expect(status).toMatchObject({ phase: 'Ready', files: 2, directories: 2, symlinks: 1 });
    expect(status.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(status.manifestDigest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(w.store.objects.has(snapshotManifestKey('team-a', 'snap-1'))).toBe(true);
    expect(status.objects).toBe(w.store.objects.size);
  });

  it('fails StoreUnavailable when the store goes away mid-copy, and deletes what it wrote', async () => {
    const store = new MemoryStore();
    store.failPutsFrom = 3;
    const w = world([snap()], { store });
    await reconcileSnapshot('team-a', 's1', w.deps);
    await w.settled;
    await reconcileSnapshot('team-a', 's1', w.deps);
    expect(current(w).status).toMatchObject({ phase: 'Failed' });
    expect(reason(w)).toBe('StoreUnavailable');
    expect(current(w).status?.digest).toBeUndefined();
    expect(store.objects.size).toBe(0);
  });

  it('fails ArchiveFailed when the agent stream is cut (no trailer)', async () => {
    const { bytes } = archiveOf(sampleTree(500_000));
    const agent: AgentArchiveClient = {
      archive: () =>
        Promise.resolve({
          body: chunks(bytes),
          summary: () => {
            throw new Error('cut');
          },
        }),
      restore: () => Promise.reject(new Error('unused')),
      digest: () => Promise.reject(new Error('unused')),
    };
    const w = world([snap()], { agent });
    await reconcileSnapshot('team-a', 's1', w.deps);
    await w.settled;
    await reconcileSnapshot('team-a', 's1', w.deps);
    expect(current(w).status?.phase).toBe('Failed');
    expect(w.store.objects.has(snapshotManifestKey('team-a', 'snap-1'))).toBe(false);
  });

  it.each<[string, Parameters<typeof world>[1], string]>([
    ['no object store', { store: null }, 'StorageNotConfigured'],
    ['count quota', { limits: { maxPerNamespace: 0 } }, 'QuotaExceeded'],
    ['byte quota', { limits: { maxBytesPerNamespace: 0 } }, 'QuotaExceeded'],
  ])('fails at once: %s -> %s', async (_what, over, expected) => {
    const w = world([snap()], over);
    await reconcileSnapshot('team-a', 's1', w.deps);
    expect(current(w).status?.phase).toBe('Failed');
    expect(reason(w)).toBe(expected);
  });

  it('fails SessionNotFound for a session of another name (there is no namespace field to reach another)', async () => {
    const w = world([{ ...snap(), spec: { sessionRef: { name: 'other' } } }]);
    await reconcileSnapshot('team-a', 's1', w.deps);
    expect(reason(w)).toBe('SessionNotFound');
  });

  it('waits for a session that is not Ready, then fails SessionUnavailable after the wait', async () => {
    const w = world([snap()], { session: session() });
    const r = await reconcileSnapshot('team-a', 's1', w.deps);
    expect(reason(w)).toBe('SessionNotReady');
    expect(r.requeueAfterMs).toBeGreaterThan(0);
    const late = world([snap({ createdAt: '2030-01-01T00:00:00Z' })], {
      session: session(),
      limits: { sessionWaitMs: 1000 },
    });
    await reconcileSnapshot('team-a', 's1', late.deps);
    expect(reason(late)).toBe('SessionUnavailable');
  });

  it('never copies from a Pod that is not exactly the session’s (a planted Pod under the session’s Pod name)', async () => {
    const planted = podView(ready, (p) => {
      p.metadata = { ...p.metadata, controller: { ...p.metadata.controller!, uid: 'someone-else' } };
    });
    let asked = false;
    const agent: AgentArchiveClient = {
      archive: () => {
        asked = true;
        return Promise.reject(new Error('must not be called'));
      },
      restore: () => Promise.reject(new Error('unused')),
      digest: () => Promise.reject(new Error('unused')),
    };
    const w = world([snap()], { pod: planted, agent });
    await reconcileSnapshot('team-a', 's1', w.deps);
    expect(reason(w)).toBe('SessionNotReady');
    expect(asked).toBe(false);
  });

  it('on deletion deletes every object of its prefix, then its finalizer; the store down keeps both', async () => {
    const w = world([snap()]);
    await reconcileSnapshot('team-a', 's1', w.deps);
    await w.settled;
    await reconcileSnapshot('team-a', 's1', w.deps);
    expect(w.store.objects.size).toBeGreaterThan(1);
    w.views.set('team-a/s1', {
      ...current(w),
      metadata: { ...current(w).metadata, deletionTimestamp: NOW.toISOString() },
    });
    w.store.down = true;
    await expect(reconcileSnapshot('team-a', 's1', w.deps)).rejects.toThrow(/down/);
    expect(current(w).metadata.finalizers).toEqual([SNAPSHOT_FINALIZER]);
    w.store.down = false;
    await reconcileSnapshot('team-a', 's1', w.deps);
    expect(w.store.objects.size).toBe(0);
    expect(current(w).metadata.finalizers).toEqual([]);
  });

  it('deletes a Ready snapshot at completedAt + ttlSecondsAfterReady, not before', async () => {
    const done = (completedAt: string): SnapshotView => ({
      ...snap(undefined, { phase: 'Ready', completedAt, conditions: [] }),
      spec: { sessionRef: { name: 'demo' }, ttlSecondsAfterReady: 60 },
    });
    const early = world([done('2030-01-01T00:04:30Z')]);
    const r = await reconcileSnapshot('team-a', 's1', early.deps);
    expect(early.writes).toEqual([]);
    expect(r.requeueAfterMs).toBe(30_000);
    const due = world([done('2030-01-01T00:03:00Z')]);
    await reconcileSnapshot('team-a', 's1', due.deps);
    expect(due.writes).toEqual(['delete s1']);
  });
});
