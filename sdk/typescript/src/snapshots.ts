/**
 * Snapshots and forks (docs/snapshots.md): the calls behind SandboxClient.snapshot, getSnapshot,
 * listSnapshots, deleteSnapshot, waitUntilSnapshotReady and fork. Kept apart from client.ts,
 * which delegates here with its own request function (code.ts's Caller).
 */
import type { Caller } from './code.js';
import { NotFoundError, TimeoutError } from './errors.js';
import { readJson, type CallSpec } from './http.js';
import type { Session } from './types.js';

/** A snapshot of a session's /workspace. */
export interface Snapshot {
  name: string;
  namespace: string;
  /** The session whose workspace it copies. */
  session: string;
  /** True once stored and its digest known. */
  ready: boolean;
  phase: 'Pending' | 'InProgress' | 'Ready' | 'Failed';
  /** Reason of the Ready condition, e.g. SnapshotReady, Snapshotting, StoreUnavailable, QuotaExceeded. */
  reason: string;
  message: string;
  /** `sha256:<hex>`: Merkle root over paths, modes, symlink targets and bytes. */
  digest?: string;
  sizeBytes?: number;
  files?: number;
  directories?: number;
  symlinks?: number;
  ttlSecondsAfterReady?: number;
  createdAt?: string;
  completedAt?: string;
}

/** POST /v1/snapshots options (the session is the first argument). */
export interface SnapshotRequest {
  /** Snapshot name; generated (`<session>-<random>`) when absent. */
  name?: string;
  /** Delete it this many seconds after it is ready. */
  ttlSecondsAfterReady?: number;
}

/** POST /v1/sessions/{name}/fork body. */
export interface ForkRequest {
  /** Sessions to start (1..10). */
  count: number;
  /** Their names (exactly count); generated (`<session>-fork-<random>`) when absent. */
  names?: string[];
  ttlSecondsAfterReady?: number;
}

/** What a fork made: the snapshot and the new sessions (each ready once its copy is verified). */
export interface ForkResult {
  snapshot: Snapshot;
  sessions: Session[];
}

type Opts = Parameters<Caller['call']>[0];
const seg = encodeURIComponent;
const json = (value: unknown): CallSpec['body'] => ({
  data: JSON.stringify(value),
  contentType: 'application/json',
});

/** Takes a snapshot of a session (answers at once; not retried without a name). */
export async function snapshot(
  c: Caller,
  session: string,
  req: SnapshotRequest,
  opts: Opts,
): Promise<Snapshot> {
  const ok = await c.call(opts, {
    method: 'POST',
    path: '/v1/snapshots',
    body: json({ session, ...req }),
    idempotent: false,
  });
  return readJson<Snapshot>(ok, c.maxBytes);
}

/** One snapshot. */
export async function getSnapshot(c: Caller, name: string, opts: Opts): Promise<Snapshot> {
  const ok = await c.call(opts, { method: 'GET', path: `/v1/snapshots/${seg(name)}`, idempotent: true });
  return readJson<Snapshot>(ok, c.maxBytes);
}

/** The snapshots of a namespace, by name. */
export async function listSnapshots(c: Caller, opts: Opts): Promise<Snapshot[]> {
  const ok = await c.call(opts, { method: 'GET', path: '/v1/snapshots', idempotent: true });
  return (await readJson<{ items: Snapshot[] }>(ok, c.maxBytes)).items;
}

/** Deletes a snapshot and its stored data; a 404 after a retry counts as success. */
export async function deleteSnapshot(c: Caller, name: string, opts: Opts): Promise<void> {
  let retried = false;
  try {
    const ok = await c.call(opts, {
      method: 'DELETE',
      path: `/v1/snapshots/${seg(name)}`,
      idempotent: true,
      onRetry: () => (retried = true),
    });
    ok.done();
    await ok.response.body?.cancel();
  } catch (err) {
    if (err instanceof NotFoundError && retried) return;
    throw err;
  }
}

/** A snapshot and `count` sessions from it (never retried: it creates). */
export async function fork(c: Caller, session: string, req: ForkRequest, opts: Opts): Promise<ForkResult> {
  const ok = await c.call(opts, {
    method: 'POST',
    path: `/v1/sessions/${seg(session)}/fork`,
    body: json(req),
    idempotent: false,
  });
  return readJson<ForkResult>(ok, c.maxBytes);
}

/** Polls a snapshot until it is Ready; throws TimeoutError, or an Error naming the reason when it failed. */
export async function waitUntilSnapshotReady(
  c: Caller,
  name: string,
  wait: { timeoutMs?: number; intervalMs?: number; signal?: AbortSignal },
  opts: Opts,
): Promise<Snapshot> {
  const end = Date.now() + (wait.timeoutMs ?? 300_000);
  for (;;) {
    const s = await getSnapshot(c, name, opts);
    if (s.ready) return s;
    if (s.phase === 'Failed') throw new Error(`snapshot ${name} failed: ${s.reason}: ${s.message}`);
    if (Date.now() > end) throw new TimeoutError(`snapshot ${name} is not ready: ${s.reason}: ${s.message}`);
    await new Promise((resolve) => setTimeout(resolve, wait.intervalMs ?? 1000));
    wait.signal?.throwIfAborted();
  }
}
