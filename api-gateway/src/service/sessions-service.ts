/**
 * Session operations shared by the REST routes and the MCP tools: create-or-get, get, list,
 * suspend/resume and delete, each scoped to a namespace the caller's key may use.
 */
import { randomBytes } from 'node:crypto';

import { ANNOTATIONS, type SandboxSession } from '@sandbox-platform/api';

import type { Principal } from '../auth/keys.js';
import type { SessionPolicy } from '../config.js';
import { ProblemError } from '../errors.js';
import { DEFAULT_ADDRESS_POLICY } from '../sessions/address.js';
import { toSessionView, type SessionView } from '../sessions/model.js';
import { dialState, type DialPolicy } from '../sessions/pod-identity.js';
import {
  buildSession,
  buildSpec,
  checkPolicy,
  conflictingFields,
  type SessionOverrides,
} from '../sessions/policy.js';
import { SessionQuota, type QuotaLimits } from '../sessions/quota.js';
import type { SessionStore } from '../sessions/store.js';
import type { TraceContext } from '../tracing/tracing-config.js';
import { assertSessionName } from './namespaces.js';

/** A create request after namespace resolution. */
export interface CreateSessionInput extends SessionOverrides {
  name?: string;
}

/** Generated names: `sbx-` and 10 base-36 characters (about 51 bits), a valid DNS label. */
export function generateName(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  const bytes = randomBytes(10);
  return 'sbx-' + [...bytes].map((b) => alphabet[b % 36]).join('');
}

/** Throws gateway-not-ready while the caches have not synced. */
export function assertSynced(store: SessionStore): void {
  if (!store.synced()) {
    throw new ProblemError('gateway-not-ready', 'the gateway is still loading sessions', {
      retryAfterSeconds: 1,
    });
  }
}

/** No quotas (tests and callers that do not limit sessions). */
const NO_QUOTA: QuotaLimits = { maxSessionsPerKey: 0, maxSessionsPerNamespace: 0 };

/** Create, read, list and delete sessions. */
export class SessionsService {
  private readonly quota: SessionQuota;

  constructor(
    private readonly store: SessionStore,
    private readonly policy: SessionPolicy,
    private readonly dialPolicy: DialPolicy = { address: DEFAULT_ADDRESS_POLICY, podIdentityCheck: true },
    quota: QuotaLimits = NO_QUOTA,
  ) {
    this.quota = new SessionQuota(store, quota);
  }

  /**
   * Create-or-get; idempotent by name. `created` tells 201 from 200. A new session counts against
   * the caller's and the namespace's quotas (403 quota-exceeded); an existing one is returned.
   */
  async create(
    principal: Principal,
    namespace: string,
    input: CreateSessionInput,
    trace?: TraceContext,
  ): Promise<{ session: SessionView; created: boolean }> {
    const { name: requested, ...overrides } = input;
    const name = requested ?? generateName();
    assertSessionName(name);
    checkPolicy(overrides, this.policy);
    const spec = buildSpec(overrides, this.policy);
    const desired = buildSession(namespace, name, spec);
    desired.metadata.annotations = { [ANNOTATIONS.createdByKey]: principal.keyId };
    const settle = this.store.get(namespace, name) ? undefined : this.quota.admit(principal, namespace, name);
    let created = false;
    let session;
    try {
      ({ session, created } = await this.store.createOrGet(desired, trace));
    } finally {
      settle?.(created);
    }
    if (!created) {
      if (session.metadata.deletionTimestamp) {
        throw new ProblemError('conflict', `session ${name} is being deleted; retry once it is gone`, {
          retryAfterSeconds: 2,
        });
      }
      const fields = conflictingFields(overrides, session.spec);
      if (fields.length > 0) {
        throw new ProblemError('conflict', `session ${name} exists with a different ${fields.join(', ')}`);
      }
    }
    return { session: this.view(session), created };
  }

  /**
   * One session; 404 when unknown, 410 when this replica saw it deleted. A cache miss is checked
   * with the API server before a 404: a client that just created the session (through this
   * replica or another) reads its own write even while this replica's watch lags.
   */
  async get(namespace: string, name: string, trace?: TraceContext): Promise<SessionView> {
    assertSessionName(name);
    assertSynced(this.store);
    const s = this.store.get(namespace, name) ?? (await readThrough(this.store, namespace, name, trace));
    if (!s) throw notFoundOrGone(this.store, namespace, name);
    return this.view(s);
  }

  /** Every session of the namespace, by name. */
  list(namespace: string): SessionView[] {
    assertSynced(this.store);
    return this.store
      .list(namespace)
      .map((s) => this.view(s))
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  /**
   * Sets spec.suspend (ADR 0015): suspend deletes the Pod and keeps the Secret and workspace;
   * resume makes a new Pod on the same workspace. Idempotent; 404 when the session does not exist,
   * 410 when this replica saw it deleted, 409 while it is being deleted.
   */
  async setSuspended(
    namespace: string,
    name: string,
    suspend: boolean,
    trace?: TraceContext,
  ): Promise<SessionView> {
    assertSessionName(name);
    const cached = this.store.get(namespace, name);
    if (cached?.metadata.deletionTimestamp) {
      throw new ProblemError('conflict', `session ${name} is being deleted`);
    }
    const patched = await this.store.setSuspended(namespace, name, suspend, trace);
    if (!patched) throw notFoundOrGone(this.store, namespace, name);
    return this.view(patched);
  }

  /** The API view; `ready` only when the gateway would dial the session (its Pod identity checked). */
  private view(s: SandboxSession): SessionView {
    return toSessionView(s, dialState(s, this.store, this.dialPolicy));
  }

  /** Deletes a session; 404 when it does not exist. */
  async delete(namespace: string, name: string, trace?: TraceContext): Promise<void> {
    assertSessionName(name);
    const deleted = await this.store.delete(namespace, name, trace);
    if (!deleted) throw new ProblemError('session-not-found', `no session ${name} in namespace ${namespace}`);
  }
}

/** A cache miss read from the API server, unless this replica saw the session deleted. */
export async function readThrough(
  store: SessionStore,
  namespace: string,
  name: string,
  trace?: TraceContext,
): Promise<SandboxSession | undefined> {
  if (store.tombstone(namespace, name)) return undefined;
  return store.readFresh(namespace, name, trace);
}

/** 410 with the reason when the session was seen deleted, else 404. */
export function notFoundOrGone(store: SessionStore, namespace: string, name: string): ProblemError {
  const t = store.tombstone(namespace, name);
  if (t) {
    return new ProblemError('session-gone', `session ${name} was deleted (${t.reason})`, {
      extensions: { reason: t.reason },
    });
  }
  return new ProblemError('session-not-found', `no session ${name} in namespace ${namespace}`);
}
