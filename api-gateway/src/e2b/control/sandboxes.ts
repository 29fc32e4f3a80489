/**
 * The E2B control API's operations on sandboxes, over the gateway's session service (quotas,
 * policy, create-or-get, suspend/resume, delete: exactly what the REST API does) and the two
 * extra writes of kube.ts. A sandbox is visible only to keys that may use its namespace; any
 * other key gets 404, as for a sandbox that does not exist.
 */
import { REASONS, type SandboxSession } from '@sandbox-platform/api';

import type { Principal } from '../../auth/keys.js';
import type { SessionPolicy } from '../../config.js';
import { ProblemError, isProblemError } from '../../errors.js';
import type { CancelSignal } from '../../exec/types.js';
import type { SessionsService } from '../../service/sessions-service.js';
import type { SessionOverrides } from '../../sessions/policy.js';
import { readyCondition } from '../../sessions/model.js';
import type { SessionStore } from '../../sessions/store.js';
import type { AccessTokens } from '../access-token.js';
import { parseSandboxId, sandboxId, type SandboxRef } from '../ids.js';
import type { SessionPatcher } from './kube.js';
import { extended, newLifecycle, retimed, type OnTimeout } from './lifecycle.js';
import { listPage, type ListQuery } from './listing.js';
import { resolveTemplate, type PoolLookup, type TemplateChoice } from './templates.js';
import {
  METADATA_ANNOTATION,
  detailAnswer,
  sandboxAnswer,
  type DetailAnswer,
  type ListedAnswer,
  type SandboxAnswer,
} from './views.js';

/** A create request after validation (E2B's NewSandbox). */
/** Longest a write of ours waits to show in the session store before the call answers. */
const OWN_WRITE_WAIT_MS = 2000;

/** True when `s` is `written` or a later version: same generation or later (spec writes bump it). */
function showsWrite(s: SandboxSession, written: SandboxSession): boolean {
  const seen = s.metadata.generation;
  const wrote = written.metadata.generation;
  if (seen === undefined || wrote === undefined)
    return s.metadata.resourceVersion === written.metadata.resourceVersion;
  return seen >= wrote;
}

export interface NewSandbox {
  templateID: string;
  timeout?: number;
  autoPause?: boolean;
  metadata?: Record<string, string>;
  envVars?: Record<string, string>;
}

/** What the operations need. */
export interface SandboxesDeps {
  sessions: SessionsService;
  store: SessionStore;
  tokens: AccessTokens;
  pools: PoolLookup;
  patcher: SessionPatcher;
  policy: SessionPolicy;
  /** Give sandboxes a persistent workspace, so pause keeps their files (not possible with a pool). */
  persistentWorkspace: boolean;
  /** How long create and connect wait for the sandbox to be Ready. */
  maxWaitMs: number;
  /** Now, in ms (tests pass a clock). */
  now?: () => number;
}

/** E2B's default timeout when a request names none (its API's default). */
export const DEFAULT_TIMEOUT_SECONDS = 15;
/** Metadata bounds: entries, and bytes of the annotation's JSON. */
export const MAX_METADATA_ENTRIES = 64;
export const MAX_METADATA_BYTES = 16 * 1024;

/** Ready reasons that will not pass by waiting: create gives up at once and removes the session. */
const HOPELESS: ReadonlySet<string> = new Set([
  REASONS.imagePullFailed,
  REASONS.storageClassNotFound,
  REASONS.nameConflict,
]);

function metadataJson(metadata: Record<string, string> | undefined): string | undefined {
  const entries = Object.entries(metadata ?? {});
  if (entries.length === 0) return undefined;
  const json = JSON.stringify(Object.fromEntries(entries));
  if (entries.length > MAX_METADATA_ENTRIES || Buffer.byteLength(json) > MAX_METADATA_BYTES) {
    throw new ProblemError(
      'invalid-request',
      `metadata may hold at most ${MAX_METADATA_ENTRIES} entries and ${MAX_METADATA_BYTES} bytes of JSON`,
    );
  }
  return json;
}

function overridesOf(
  choice: TemplateChoice,
  lifecycle: { idleTimeoutSeconds: number; maxLifetimeSeconds: number },
  onTimeout: OnTimeout,
  persistent: boolean,
): SessionOverrides {
  const o: SessionOverrides = { ...lifecycle };
  if (choice.kind === 'pool') o.pool = choice.name;
  if (choice.kind === 'image') o.image = choice.image;
  const pvc = choice.kind !== 'pool' && (persistent || onTimeout === 'pause');
  if (pvc) o.persistentWorkspace = true;
  if (onTimeout === 'pause') {
    if (!pvc) {
      throw new ProblemError(
        'invalid-request',
        `autoPause needs a persistent workspace, which a pool's sandbox (template ${choice.kind === 'pool' ? choice.name : ''}) does not have`,
      );
    }
    o.shutdownPolicy = 'Suspend';
  }
  return o;
}

/** The control API's sandbox operations. */
export class E2bSandboxes {
  private readonly now: () => number;

  constructor(private readonly d: SandboxesDeps) {
    this.now = d.now ?? Date.now;
  }

  /** The session of an ID the key may see; 404 (never 403) otherwise. */
  refOf(principal: Principal, id: string): SandboxRef {
    const ref = parseSandboxId(id);
    if (!ref || !principal.namespaces.has(ref.namespace)) throw notFound(id);
    return ref;
  }

  /** The session itself (from the watch cache, read through on a miss); 404 when gone. */
  async session(principal: Principal, id: string): Promise<SandboxSession> {
    const ref = this.refOf(principal, id);
    try {
      await this.d.sessions.get(ref.namespace, ref.name);
    } catch (err) {
      throw isProblemError(err) && (err.slug === 'session-not-found' || err.slug === 'session-gone')
        ? notFound(id)
        : err;
    }
    const s =
      this.d.store.get(ref.namespace, ref.name) ?? (await this.d.store.readFresh(ref.namespace, ref.name));
    if (!s || s.metadata.deletionTimestamp) throw notFound(id);
    return s;
  }

  /** POST /sandboxes: a new session, Ready (waited for), with its access token. */
  async create(
    principal: Principal,
    namespace: string,
    req: NewSandbox,
    signal?: CancelSignal,
  ): Promise<SandboxAnswer> {
    const onTimeout: OnTimeout = req.autoPause === true ? 'pause' : 'kill';
    const lifecycle = newLifecycle(req.timeout ?? DEFAULT_TIMEOUT_SECONDS, onTimeout, this.d.policy);
    const metadata = metadataJson(req.metadata);
    const choice = await resolveTemplate(req.templateID, namespace, this.d.pools);
    const overrides = overridesOf(choice, lifecycle, onTimeout, this.d.persistentWorkspace);
    if (req.envVars && Object.keys(req.envVars).length > 0) overrides.env = req.envVars;
    const { session: view } = await this.d.sessions.create(principal, namespace, overrides);
    const ref = { namespace, name: view.name };
    try {
      if (metadata !== undefined)
        await this.d.patcher.annotate(namespace, view.name, { [METADATA_ANNOTATION]: metadata });
      const ready = await this.waitReady(ref, signal);
      return sandboxAnswer(ready, this.token(ready));
    } catch (err) {
      // Nothing is left half-created: a sandbox the caller never got is removed.
      await this.d.sessions.delete(namespace, view.name).catch(() => undefined);
      throw err;
    }
  }

  /** GET /sandboxes/{id}. */
  async detail(principal: Principal, id: string): Promise<DetailAnswer> {
    const s = await this.session(principal, id);
    return detailAnswer(s, this.token(s), this.now());
  }

  /** GET /v2/sandboxes (and /sandboxes: running ones, no pages) over the key's namespaces. */
  list(principal: Principal, q: ListQuery): { items: ListedAnswer[]; nextToken?: string } {
    const sessions = [...principal.namespaces].flatMap((ns) => this.d.store.list(ns));
    return listPage(
      sessions.filter((s) => !s.metadata.deletionTimestamp),
      q,
      this.now(),
    );
  }

  /** DELETE /sandboxes/{id}. */
  async kill(principal: Principal, id: string): Promise<void> {
    const ref = this.refOf(principal, id);
    try {
      await this.d.sessions.delete(ref.namespace, ref.name);
    } catch (err) {
      throw isProblemError(err) && err.slug === 'session-not-found' ? notFound(id) : err;
    }
  }

  /** POST /sandboxes/{id}/timeout: ends (or pauses) `timeout` seconds from now. */
  async setTimeout(principal: Principal, id: string, timeoutSeconds: number): Promise<void> {
    const s = await this.session(principal, id);
    const fields = retimed(s, timeoutSeconds, this.now(), this.d.policy);
    const ref = { namespace: s.metadata.namespace!, name: s.metadata.name! };
    const written = await this.d.patcher.setLifecycle(ref.namespace, ref.name, fields);
    if (!written) throw notFound(id);
    await this.untilStoreShows(ref, written);
  }

  /**
   * Waits (at most OWN_WRITE_WAIT_MS) until the session store (an informer cache) shows a write of
   * ours, so that a read right after the call answers with it: the SDKs' setTimeout then getInfo
   * saw the old timeout (the cache trails the API server by the watch's delay). Past the wait it
   * answers anyway: the write is made.
   */
  private async untilStoreShows(ref: SandboxRef, written: SandboxSession): Promise<void> {
    const deadline = this.now() + OWN_WRITE_WAIT_MS;
    for (;;) {
      const s = this.d.store.get(ref.namespace, ref.name);
      const left = deadline - this.now();
      if (!s || showsWrite(s, written) || left <= 0) return;
      await this.d.store.waitForChange(ref.namespace, ref.name, left);
    }
  }

  /** POST /sandboxes/{id}/pause: suspends (its files kept); 409 when already paused. */
  async pause(principal: Principal, id: string, signal?: CancelSignal): Promise<void> {
    const s = await this.session(principal, id);
    if (s.spec.suspend === true) throw new ProblemError('conflict', `sandbox ${id} is already paused`);
    if (!s.spec.workspace?.persistentVolumeClaim) {
      throw new ProblemError(
        'invalid-request',
        `sandbox ${id} has no persistent workspace: pausing it would lose its files (create sandboxes with a persistent workspace: GATEWAY_E2B_PERSISTENT_WORKSPACE, or autoPause)`,
      );
    }
    const ref = { namespace: s.metadata.namespace!, name: s.metadata.name! };
    await this.d.sessions.setSuspended(ref.namespace, ref.name, true);
    await this.waitSuspended(ref, signal);
  }

  /**
   * Waits (at most maxWaitMs) until the operator reports the suspension (Ready=False/Suspended: its
   * Pod is going). E2B's pause returns once the sandbox is paused; returning earlier would let a
   * connect right after it resume a sandbox whose Pod the operator is only about to delete, and
   * its calls would then meet the Pod going away. Past the wait it answers anyway: the suspension
   * is requested and happens.
   */
  private async waitSuspended(ref: SandboxRef, signal?: CancelSignal): Promise<void> {
    const deadline = this.now() + this.d.maxWaitMs;
    for (;;) {
      const s = this.d.store.get(ref.namespace, ref.name);
      const left = deadline - this.now();
      if (!s || readyCondition(s)?.reason === REASONS.suspended || left <= 0 || signal?.aborted) return;
      await this.d.store.waitForChange(ref.namespace, ref.name, left, signal);
    }
  }

  /**
   * POST /sandboxes/{id}/connect (and the older /resume): resumes a paused sandbox, extends its
   * timeout (never shortens it), waits until it is Ready. `resumed` tells 201 from 200.
   */
  async connect(
    principal: Principal,
    id: string,
    timeoutSeconds: number | undefined,
    signal?: CancelSignal,
  ): Promise<{ answer: SandboxAnswer; resumed: boolean }> {
    const s = await this.session(principal, id);
    const ref = { namespace: s.metadata.namespace!, name: s.metadata.name! };
    const fields =
      timeoutSeconds === undefined ? undefined : extended(s, timeoutSeconds, this.now(), this.d.policy);
    if (fields) {
      const written = await this.d.patcher.setLifecycle(ref.namespace, ref.name, fields);
      if (!written) throw notFound(id);
      await this.untilStoreShows(ref, written);
    }
    const resumed = s.spec.suspend === true;
    if (resumed) await this.d.sessions.setSuspended(ref.namespace, ref.name, false);
    const ready = await this.waitReady(ref, signal);
    return { answer: sandboxAnswer(ready, this.token(ready)), resumed };
  }

  private token(s: SandboxSession): string {
    return this.d.tokens.token({
      namespace: s.metadata.namespace!,
      name: s.metadata.name!,
      uid: s.metadata.uid!,
    });
  }

  /** Waits for Ready (at most maxWaitMs); a hopeless reason fails at once (400), time out is 503. */
  private async waitReady(ref: SandboxRef, signal?: CancelSignal): Promise<SandboxSession> {
    const deadline = this.now() + this.d.maxWaitMs;
    for (;;) {
      const view = await this.d.sessions.get(ref.namespace, ref.name);
      const s = this.d.store.get(ref.namespace, ref.name);
      if (view.ready && s) return s;
      if (HOPELESS.has(view.reason)) {
        throw new ProblemError('invalid-request', `sandbox cannot start: ${view.reason}: ${view.message}`);
      }
      const left = deadline - this.now();
      if (left <= 0 || signal?.aborted) {
        throw new ProblemError(
          'session-not-ready',
          `sandbox ${sandboxId(ref)} is not ready: ${view.reason}: ${view.message}`,
          {
            retryAfterSeconds: 2,
          },
        );
      }
      await this.d.store.waitForChange(ref.namespace, ref.name, left, signal);
    }
  }
}

/** E2B's 404 for a sandbox (missing, gone, or of a namespace the key may not use). */
export function notFound(id: string): ProblemError {
  return new ProblemError('session-not-found', `sandbox ${JSON.stringify(id.slice(0, 128))} not found`);
}
