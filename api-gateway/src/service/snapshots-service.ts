/**
 * Snapshot operations shared by the REST routes and the MCP tools (docs/snapshots.md): take a
 * snapshot of a session, read, list and delete snapshots, and fork (a snapshot of a session plus
 * N sessions started from it), each in a namespace the caller's key may use. A key sees only its
 * namespaces' snapshots, and a session can only name a snapshot of its own namespace (the CRD has
 * no namespace field for it), so another tenant's snapshot is never listed, read or restored.
 *
 * A fork answers at once: the snapshot and the sessions are created together, and each session
 * becomes Ready once the snapshot is Ready and its copy verified (the operator's restore). Forked
 * sessions count against the session quotas like any other.
 */
import { randomBytes } from 'node:crypto';

import { ANNOTATIONS, API_VERSION, KIND, type SandboxSession } from '@sandbox-platform/api';

import type { Principal } from '../auth/keys.js';
import { ProblemError } from '../errors.js';
import { SessionQuota, type QuotaLimits } from '../sessions/quota.js';
import type { SessionStore } from '../sessions/store.js';
import type { SessionView } from '../sessions/model.js';
import type { SnapshotApi } from '../snapshots/kube-snapshots.js';
import { buildSnapshot, forkedSpec, toSnapshotView, type SnapshotView } from '../snapshots/model.js';
import { assertSessionName } from './namespaces.js';
import { readThrough, notFoundOrGone, type SessionsService } from './sessions-service.js';

/** Most sessions one fork starts. */
export const MAX_FORK_COUNT = 10;

/** A snapshot request. */
export interface SnapshotInput {
  session: string;
  name?: string;
  ttlSecondsAfterReady?: number;
}

/** A fork request. */
export interface ForkInput {
  count: number;
  names?: string[];
  ttlSecondsAfterReady?: number;
}

/** What a fork made. */
export interface ForkResult {
  snapshot: SnapshotView;
  sessions: SessionView[];
}

/** The service. */
export class SnapshotsService {
  private readonly quota: SessionQuota;

  constructor(
    private readonly api: SnapshotApi,
    private readonly store: SessionStore,
    private readonly sessions: SessionsService,
    quota: QuotaLimits,
  ) {
    this.quota = new SessionQuota(store, quota);
  }

  /** Creates a snapshot of a session of the namespace (404 when the session does not exist). */
  async create(namespace: string, input: SnapshotInput): Promise<SnapshotView> {
    assertSessionName(input.session);
    await this.source(namespace, input.session);
    const name = input.name ?? derivedName(input.session);
    assertSessionName(name);
    const created = await this.api.create(
      namespace,
      buildSnapshot(namespace, name, input.session, input.ttlSecondsAfterReady),
    );
    return toSnapshotView(created);
  }

  /** One snapshot; 404 snapshot-not-found. */
  async get(namespace: string, name: string): Promise<SnapshotView> {
    assertSessionName(name);
    const s = await this.api.get(namespace, name);
    if (!s) throw notFound(namespace, name);
    return toSnapshotView(s);
  }

  /** The namespace's snapshots, by name. */
  async list(namespace: string): Promise<SnapshotView[]> {
    const items = await this.api.list(namespace);
    return items.map(toSnapshotView).sort((a, b) => a.name.localeCompare(b.name));
  }

  /** Deletes a snapshot (its objects go with it); 404 when it does not exist. */
  async delete(namespace: string, name: string): Promise<void> {
    assertSessionName(name);
    if (!(await this.api.delete(namespace, name))) throw notFound(namespace, name);
  }

  /** A snapshot of `session` and `count` sessions started from it. */
  async fork(
    principal: Principal,
    namespace: string,
    session: string,
    input: ForkInput,
  ): Promise<ForkResult> {
    const names = forkNames(session, input);
    const source = await this.source(namespace, session);
    if ((source.spec.execTransport ?? 'Agent') !== 'Agent')
      throw new ProblemError(
        'invalid-request',
        `session ${session} uses KubernetesExec: only Agent sessions can be snapshotted`,
      );
    const snapshot = await this.create(namespace, {
      session,
      name: derivedName(session),
      ttlSecondsAfterReady: input.ttlSecondsAfterReady,
    });
    const sessions: SessionView[] = [];
    for (const name of names)
      sessions.push(await this.startFrom(principal, { namespace, name, source, snapshot: snapshot.name }));
    return { snapshot, sessions };
  }

  private async startFrom(
    principal: Principal,
    at: { namespace: string; name: string; source: SandboxSession; snapshot: string },
  ): Promise<SessionView> {
    const { namespace, name, source, snapshot } = at;
    const desired: SandboxSession = {
      apiVersion: API_VERSION,
      kind: KIND,
      metadata: { name, namespace, annotations: { [ANNOTATIONS.createdByKey]: principal.keyId } },
      spec: forkedSpec(source, snapshot),
    };
    const settle = this.quota.admit(principal, namespace, name);
    let created = false;
    try {
      ({ created } = await this.store.createOrGet(desired));
    } finally {
      settle(created);
    }
    if (!created) throw new ProblemError('conflict', `session ${name} already exists; choose other names`);
    return this.sessions.get(namespace, name);
  }

  private async source(namespace: string, name: string): Promise<SandboxSession> {
    const s = this.store.get(namespace, name) ?? (await readThrough(this.store, namespace, name));
    if (!s) throw notFoundOrGone(this.store, namespace, name);
    if (s.metadata.deletionTimestamp) throw new ProblemError('conflict', `session ${name} is being deleted`);
    return s;
  }
}

/** The fork's session names: the given ones, or `<session>-fork-<5 random>` each. */
function forkNames(session: string, input: ForkInput): string[] {
  if (!Number.isInteger(input.count) || input.count < 1 || input.count > MAX_FORK_COUNT)
    throw new ProblemError('invalid-request', `count must be 1..${MAX_FORK_COUNT}`);
  if (input.names) {
    if (input.names.length !== input.count)
      throw new ProblemError('invalid-request', `names must hold exactly count (${input.count}) names`);
    if (new Set(input.names).size !== input.names.length)
      throw new ProblemError('invalid-request', 'names must be distinct');
    input.names.forEach(assertSessionName);
    return input.names;
  }
  return Array.from({ length: input.count }, () => derivedName(session, 'fork-'));
}

/** `<base>-<infix><5 random base-36>`, at most 63 characters. */
function derivedName(base: string, infix = ''): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  const suffix = [...randomBytes(5)].map((b) => alphabet[b % 36]).join('');
  const tail = `-${infix}${suffix}`;
  return `${base.slice(0, 63 - tail.length).replace(/-+$/, '')}${tail}`;
}

function notFound(namespace: string, name: string): ProblemError {
  return new ProblemError('snapshot-not-found', `no snapshot ${name} in namespace ${namespace}`);
}
