/**
 * claimPooledPod: a session that has no Pod yet is bound to a warm Pod of its pool (spec.poolRef,
 * or the namespace's default pool) instead of getting one created (docs/adr/0016-warm-pools.md).
 * Runs first (the Secret is created alongside the claim) and before ensurePod, which then treats
 * the bound Pod like any Pod of the session (ended: deleted and replaced; being deleted: waited for).
 *
 *   - nothing is decided before the pool index has listed (a Pod bound before a restart is not
 *     seen until then);
 *   - a pool Pod already bound to the session (status.podName, or found by its controller
 *     ownerReference after the operator died between the claim and the status write) is used;
 *     only a Pod in the session's namespace whose controller reference is exactly the session
 *     (served apiVersion, kind, name, UID) counts (ADR 0027): a Pod anyone planted elsewhere,
 *     naming this session, is never used, asked, sent the token, deleted, nor waited for;
 *     when the status does not record it, the agent is asked which session it serves, and bound
 *     now if the claim got no further; a Pod that serves another session is deleted;
 *   - a Pod created cold for the session (sbs-<name>) is left to ensurePod;
 *   - otherwise the pool is asked for a warm Pod: claimed (one patch with a resourceVersion
 *     precondition) and bound (one signed call to its agent, carrying the token, the session's
 *     env with its Secret values, and its startup command); when none is available, the
 *     session is created cold, from the pool's template (Events PoolEmpty, PoolNotFound). A
 *     Secret the env names that does not exist claims nothing (Ready=False/SecretNotFound).
 */
import {
  podName,
  POOL_EVENT_REASONS,
  deriveToken,
  type SandboxSession,
  type SandboxSessionSpec,
} from '@sandbox-platform/api';

import type { PodView } from '../state/views.js';
import type { SessionRef } from '../resources/metadata.js';
import { errorFields } from '../telemetry/logger.js';
import { sessionEnvOf, type EnvValue } from './env-sources.js';
import { expiresAtOf } from './lifecycle-phase.js';
import { statusInputsOf, type ControllerDeps, type PhaseResult, type Scope } from './scope.js';
import { ensureSecret, takeCreatedSecret } from './secret-phase.js';
import { computeStatus } from './status.js';
import { statusEqual } from './status-patch.js';
import { writeStatus } from './status-write.js';

/** Which pool a session without a Pod takes from. */
export type PoolChoice =
  | { readonly kind: 'none' }
  /** spec.poolRef names a pool that does not exist (or is being deleted). */
  | { readonly kind: 'missing'; readonly name: string }
  /**
   * The pool, and the spec a cold Pod of the session is built from: the session's spec with the
   * pool's template in place of every Pod-shaping field.
   */
  | { readonly kind: 'pool'; readonly name: string; readonly coldSpec: SandboxSessionSpec };

/**
 * What a bind hands a warm Pod besides its identity: the session token, the session's env (Secret
 * values resolved) and its startup command. Never logged, never in an Event or the status.
 */
export interface BindContent {
  readonly token: string;
  readonly env: readonly EnvValue[];
  readonly startup?: string;
}

/** A claim of a warm Pod of `pool` for the session. */
export interface ClaimRequest {
  readonly pool: string;
  readonly session: SandboxSession;
  readonly ref: SessionRef;
  readonly content: BindContent;
  /**
   * Called once a Pod's agent accepted the bind, while its claim patch may still be on its way
   * (they go out together): the claim phase writes Ready then (ADR 0016, "60 ms"). Never rejects.
   */
  readonly onBound?: (pod: PodView) => Promise<void>;
}

/** What the agent of a bound but unrecorded Pod said. */
export type Confirmation = 'bound' | 'lost' | 'unknown';

/** The outcome of a claim. */
export interface Claim {
  /** The warm Pod now bound to the session; undefined: none was, create the session cold. */
  readonly pod?: PodView;
  /** Pods whose bind failed (deleted), for the BindFailed Event. */
  readonly failed: readonly string[];
}

/** The pool side of the claim, implemented in pool/claims.ts. */
export interface PoolClaimer {
  /** True once the pool informers have listed: until then a missing bound Pod or pool proves nothing. */
  readonly synced: boolean;
  /** The pool Pod whose controller is exactly this session, in its namespace, if any. */
  boundPod(session: SandboxSession): PodView | undefined;
  /**
   * Asks the agent of a bound Pod whether it serves the session; binds it if the claim stopped
   * short. Throws, sending nothing, for a Pod not exactly the session's.
   */
  confirm(pod: PodView, ref: SessionRef, content: BindContent): Promise<Confirmation>;
  /** Deletes a Pod bound to the session that cannot serve it. */
  discard(pod: PodView): Promise<void>;
  /** The pool the session takes from. */
  choose(session: SandboxSession): PoolChoice;
  /** Claims and binds a warm Pod of the pool for the session. */
  claim(request: ClaimRequest): Promise<Claim>;
}

/** The claim phase (runs first: a pooled session's Secret is created while its Pod is claimed). */
export async function claimPooledPod(scope: Scope, deps: ControllerDeps): Promise<PhaseResult> {
  const pools = deps.pools;
  if (!pools) return {};
  // A pool Pod claimed by an operator that died is found only by its ownerReference, in the pool
  // index: before the pool informers have listed, "none bound" would give the session a second,
  // cold Pod. The workload releases the session queue only after they have (runtime/workload.ts).
  if (!pools.synced) throw new Error('the warm pool caches have not synced yet');
  const { namespace, name } = scope.ref;
  const bound = pools.boundPod(scope.session);
  if (bound) return useBound(scope, deps, pools, bound);
  if (deps.pods.cached(namespace, podName(name))) return {};
  const choice = pools.choose(scope.session);
  if (choice.kind === 'none') return {};
  if (choice.kind === 'missing') {
    event(scope, deps, {
      type: 'Warning',
      reason: POOL_EVENT_REASONS.poolNotFound,
      note: `SandboxPool ${choice.name} does not exist; creating the Pod cold`,
    });
    return {};
  }
  scope.podSource = { ...scope.session, spec: choice.coldSpec };
  const content = await bindContent(scope, deps);
  if (!content) return { halt: true, requeueAfterMs: deps.waitRequeueMs };
  // The Secret and the claim are both on the way to Ready and independent (a warm Pod does not
  // mount the Secret): one API round trip less than one after the other. ensureSecret, the next
  // phase, then finds the Secret made here.
  const [secret, claim] = await Promise.allSettled([
    ensureSecret(scope, deps),
    pools.claim({
      pool: choice.name,
      session: scope.session,
      ref: scope.ref,
      content,
      onBound: (pod) => publishReady(scope, deps, pod),
    }),
  ]);
  if (claim.status === 'rejected') throw claim.reason;
  record(scope, deps, choice.name, claim.value);
  if (secret.status === 'rejected') throw secret.reason;
  return secret.value;
}

/** Reports a claim: Events, the log line, and the bound Pod in the scope. */
function record(scope: Scope, deps: ControllerDeps, pool: string, claim: Claim): void {
  for (const pod of claim.failed)
    event(scope, deps, {
      type: 'Warning',
      reason: POOL_EVENT_REASONS.bindFailed,
      note: `Binding warm Pod ${pod} failed; it is deleted`,
    });
  if (!claim.pod) {
    event(scope, deps, {
      type: 'Normal',
      reason: POOL_EVENT_REASONS.poolEmpty,
      note: `SandboxPool ${pool} has no available warm Pod; creating the Pod cold`,
    });
    return;
  }
  scope.pod = claim.pod;
  scope.warmBound = true;
  scope.created = true;
  deps.logger.info('bound warm pod', {
    namespace: scope.ref.namespace,
    session: scope.ref.name,
    pool,
    pod: claim.pod.metadata.name,
  });
  const secret = takeCreatedSecret(scope);
  const bound = `Bound warm Pod ${claim.pod.metadata.name} of SandboxPool ${pool}`;
  event(scope, deps, {
    type: 'Normal',
    reason: POOL_EVENT_REASONS.boundFromPool,
    note: secret ? `${bound}; created its token Secret ${secret}` : bound,
  });
}

/** A pool Pod bound to the session: confirmed by the status, or by its agent. */
async function useBound(
  scope: Scope,
  deps: ControllerDeps,
  pools: PoolClaimer,
  pod: PodView,
): Promise<PhaseResult> {
  if (scope.session.status?.podName !== pod.metadata.name && !pod.metadata.deletionTimestamp) {
    // The bind may not have happened yet: it carries the env, which must resolve first.
    const content = await bindContent(scope, deps);
    if (!content) return { halt: true, requeueAfterMs: deps.waitRequeueMs };
    const verdict = await pools.confirm(pod, scope.ref, content);
    if (verdict === 'lost') {
      deps.logger.warn('bound warm pod does not serve its session; deleting it', {
        namespace: scope.ref.namespace,
        session: scope.ref.name,
        pod: pod.metadata.name,
      });
      await pools.discard(pod);
      return { requeueAfterMs: deps.waitRequeueMs };
    }
    if (verdict === 'unknown') {
      // Not scope.pod: an unconfirmed Pod must not make the session Ready.
      scope.waiting = `Waiting for the agent of warm Pod ${pod.metadata.name} to confirm its bind`;
      return { requeueAfterMs: deps.waitRequeueMs, halt: true };
    }
  }
  scope.pod = pod;
  scope.warmBound = true;
  return {};
}

/**
 * Writes the status as soon as a warm Pod's agent accepted the bind (Ready, naming the Pod), while
 * the claim patch and the Secret are still on their way: the API write that followed the patch
 * now overlaps it, one API round trip off the create-to-first-output path (ADR 0016, "60 ms").
 * Safe because nothing dials a Pod from the status alone: the gateway dials only a Pod its own
 * cache shows controlled by the session (ADR 0027), i.e. once the claim patch landed; a patch that
 * loses (the Pod is then deleted) leaves a status the reconcile's own write corrects at its end.
 * A failed write here is left to that write too (logged, never thrown).
 */
async function publishReady(scope: Scope, deps: ControllerDeps, pod: PodView): Promise<void> {
  const previous = { pod: scope.pod, warmBound: scope.warmBound, expiresAt: scope.expiresAt };
  scope.pod = pod;
  scope.warmBound = true;
  scope.expiresAt = expiresAtOf(scope, deps);
  const computed = computeStatus(statusInputsOf(scope, { kind: 'active' }));
  try {
    if (await writeStatus(scope, deps, computed, !statusEqual(scope.session.status, computed)))
      scope.session = { ...scope.session, status: computed };
  } catch (err) {
    deps.logger.warn('the early status write of a bound warm pod failed; the reconcile writes it', {
      namespace: scope.ref.namespace,
      session: scope.ref.name,
      ...errorFields(err),
    });
  } finally {
    Object.assign(scope, previous);
  }
}

/**
 * The bind's content; undefined (scope.envProblem set) when a Secret the env names cannot be read
 * as a value (env-sources.ts): nothing is claimed or bound then.
 */
async function bindContent(scope: Scope, deps: ControllerDeps): Promise<BindContent | undefined> {
  const env = await sessionEnvOf(scope, deps.tenantSecrets);
  if (!env) return undefined;
  const token = deriveToken(deps.masterKey, scope.ref);
  const startup = scope.session.spec.startup?.command;
  return startup === undefined ? { token, env } : { token, env, startup };
}

function event(
  scope: Scope,
  deps: ControllerDeps,
  e: { type: 'Normal' | 'Warning'; reason: string; note: string },
): void {
  deps.events.record(scope.session, { ...e, action: 'Bind' });
}
