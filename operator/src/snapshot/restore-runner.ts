/**
 * Restores of spec.workspace.fromSnapshot (docs/snapshots.md) as background tasks of the session
 * reconcile (restore-phase.ts): one per session and target (the Pod of an emptyDir workspace, the
 * claim of a persistent one). A task reads the manifest, streams the verified parts into the
 * agent, which writes and verifies the workspace. Sessions waiting for a snapshot to become Ready
 * are woken when it changes.
 */
import { performance } from 'node:perf_hooks';

import { deriveToken, type ArchiveSummary, type SandboxSession } from '@sandbox-platform/api';

import type { AgentArchiveClient } from './agent-archive.js';
import { copyIn, readManifest, type SnapshotRecord } from './copy-in.js';
import type { ObjectStore } from './s3-client.js';
import type { SnapshotView } from './snapshot-kube.js';
import { Tasks, type TaskState } from './tasks.js';

/** A finished restore. */
export interface RestoreResult {
  readonly summary: ArchiveSummary;
  readonly snapshotUID: string;
  readonly completedAt: Date;
  /** The manifest's read and the copy (copy-in.ts's CopyInResult has the copy's share). */
  readonly durationMs: number;
  /** Of that, the time spent waiting for the object store (manifest and parts read and checked). */
  readonly storeWaitMs: number;
}

/** What the runner needs. */
export interface RestoreRunnerOptions {
  readonly store?: ObjectStore;
  readonly agent: AgentArchiveClient;
  readonly snapshot: (namespace: string, name: string) => SnapshotView | undefined;
  /** Queues a session's reconcile (`namespace/name`). */
  readonly wake: (sessionKey: string) => void;
  readonly masterKey: Buffer;
  /** Restores running at once. */
  readonly concurrency: number;
}

/** The runner. */
export class RestoreRunner {
  private readonly tasks: Tasks<RestoreResult>;
  /** Digests of workspaces (before a suspension, after a resume: resume-phase.ts), by Pod. */
  private readonly digests: Tasks<ArchiveSummary>;
  private readonly waiters = new Map<string, Set<string>>();
  private readonly reported = new Set<string>();

  constructor(private readonly opts: RestoreRunnerOptions) {
    this.tasks = new Tasks((key) => opts.wake(sessionKeyOf(key)));
    this.digests = new Tasks((key) => opts.wake(sessionKeyOf(key)));
  }

  /** The digest task of a session's Pod, if any. */
  digestState(session: SandboxSession, podUID: string): TaskState<ArchiveSummary> | undefined {
    return this.digests.get(taskKey(session, podUID));
  }

  /** Asks the session's agent for the workspace digest (quiescing it first before a suspension). */
  startDigest(session: SandboxSession, podUID: string, podIP: string, quiesce: boolean): void {
    const { namespace = '', name = '', uid = '' } = session.metadata;
    const target = { podIP, token: deriveToken(this.opts.masterKey, { namespace, name, uid }) };
    this.digests.start(taskKey(session, podUID), () => this.opts.agent.digest(target, quiesce));
  }

  /** Forgets a settled digest task (its result was recorded). */
  forgetDigest(session: SandboxSession, podUID: string): void {
    this.digests.forget(taskKey(session, podUID));
  }

  /** True when an object store is configured. */
  get configured(): boolean {
    return this.opts.store !== undefined;
  }

  /** The snapshot a session names (from the snapshot informer). */
  snapshot(namespace: string, name: string): SnapshotView | undefined {
    return this.opts.snapshot(namespace, name);
  }

  /** The restore task of a session's target, if any. */
  state(session: SandboxSession, targetUID: string): TaskState<RestoreResult> | undefined {
    return this.tasks.get(taskKey(session, targetUID));
  }

  /** True when another restore may start now. */
  get hasRoom(): boolean {
    return this.tasks.running < this.opts.concurrency;
  }

  /** Starts the restore of `snap` into the session's Pod at `podIP`. */
  start(session: SandboxSession, targetUID: string, podIP: string, snap: SnapshotView): void {
    const store = this.opts.store;
    if (!store) throw new Error('no object store configured');
    const record = recordOf(snap);
    const { namespace = '', name = '', uid = '' } = session.metadata;
    const target = { podIP, token: deriveToken(this.opts.masterKey, { namespace, name, uid }) };
    this.tasks.start(taskKey(session, targetUID), async () => {
      const started = performance.now();
      const manifest = await readManifest(store, record);
      const manifestMs = performance.now() - started;
      const copy = await copyIn({ store, agent: this.opts.agent, target, snap: record, manifest });
      return {
        summary: copy.summary,
        snapshotUID: snap.metadata.uid,
        completedAt: new Date(),
        durationMs: performance.now() - started,
        storeWaitMs: manifestMs + copy.storeWaitMs,
      };
    });
  }

  /** Forgets a settled task (retryable failures start again on the next reconcile). */
  forget(session: SandboxSession, targetUID: string): void {
    const key = taskKey(session, targetUID);
    this.tasks.forget(key);
    this.reported.delete(key);
  }

  /** True the first time it is asked about a settled task: its Event is recorded once. */
  firstReport(session: SandboxSession, targetUID: string): boolean {
    const key = taskKey(session, targetUID);
    if (this.reported.has(key)) return false;
    this.reported.add(key);
    return true;
  }

  /** Remembers that a session waits for a snapshot, to wake it when the snapshot changes. */
  waitFor(namespace: string, snapshot: string, sessionKey: string): void {
    const key = `${namespace}/${snapshot}`;
    const set = this.waiters.get(key) ?? new Set<string>();
    set.add(sessionKey);
    this.waiters.set(key, set);
  }

  /** A snapshot changed: its waiting sessions reconcile again. */
  snapshotChanged(namespace: string, snapshot: string): void {
    const key = `${namespace}/${snapshot}`;
    const set = this.waiters.get(key);
    if (!set) return;
    this.waiters.delete(key);
    for (const session of set) this.opts.wake(session);
  }

  /** Aborts every restore (the leader's work stops). */
  stop(): void {
    this.tasks.stop();
    this.digests.stop();
    this.waiters.clear();
    this.reported.clear();
  }
}

/** The manifest key and the digests a restore trusts, from the snapshot's status. */
function recordOf(snap: SnapshotView): SnapshotRecord {
  const digest = snap.status?.digest ?? '';
  const manifestDigest = (snap.status?.manifestDigest ?? '').replace(/^sha256:/, '');
  return { namespace: snap.metadata.namespace, uid: snap.metadata.uid, digest, manifestDigest };
}

function taskKey(session: SandboxSession, targetUID: string): string {
  return `${session.metadata.namespace ?? ''}/${session.metadata.name ?? ''}/${targetUID}`;
}

function sessionKeyOf(taskKey: string): string {
  return taskKey.split('/').slice(0, 2).join('/');
}
