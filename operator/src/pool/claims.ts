/**
 * The pool side of claiming (the PoolClaimer of controller/claim-phase.ts; docs/adr/0016).
 *
 * A claim picks an available warm Pod from the index (Ready, current template, not being deleted,
 * not being claimed by another reconcile of this process), moves it to the session with one patch
 * carrying the resourceVersion seen (409: another claim or the pool's delete won; the next one is
 * tried), and binds it with one signed call to its agent, sent alongside the patch (tryOne). A Pod
 * whose bind fails is deleted: it is the session's by then, never returned to the pool. At most MAX_ATTEMPTS Pods are tried; then the
 * session is created cold.
 */
import {
  controlledByPool,
  controlledBySession,
  type BindPayload,
  type BindSigner,
  type SandboxSession,
} from '@sandbox-platform/api';

import type {
  BindContent,
  Claim,
  ClaimRequest,
  Confirmation,
  PoolChoice,
  PoolClaimer,
} from '../controller/claim-phase.js';
import { sessionIdentity } from '../controller/ownership.js';
import { isPodReady } from '../controller/pod-readiness.js';
import type { PodView } from '../state/views.js';
import type { SessionRef } from '../resources/metadata.js';
import type { Logger } from '../telemetry/log-port.js';
import type { BindClient } from './bind-client.js';
import { defaultPool, fitsTemplate } from './eligibility.js';
import type { PoolIndex } from './pool-index.js';
import type { PoolWriter } from './pool-kube.js';
import type { PoolMetrics } from './pool-metrics.js';
import { templateSpec } from './pool-pod.js';
import { isAvailable } from './pool-status.js';
import type { PoolPodView, PoolView } from './pool-view.js';
import type { RefillHold } from './refill-hold.js';

/** Warm Pods tried for one session before it is created cold. */
export const MAX_ATTEMPTS = 3;

/** What the claimer needs. */
export interface PoolClaimsDeps {
  readonly index: PoolIndex;
  readonly writer: PoolWriter;
  readonly bind: BindClient;
  readonly signer: BindSigner;
  /** The current template hash of a pool. */
  readonly hashOf: (pool: PoolView) => string;
  readonly metrics: PoolMetrics;
  readonly logger: Logger;
  /** Wakes the pool's reconcile (a claim took one of its warm Pods: refill). */
  readonly wake: (namespace: string, pool: string) => void;
  /** Claims in flight per pool: the pool's refill waits for them (refill-hold.ts). */
  readonly hold?: RefillHold;
  readonly now?: () => number;
}

/** The claimer. */
export class PoolClaims implements PoolClaimer {
  /** UIDs of warm Pods a reconcile of this process is claiming right now. */
  private readonly reserved = new Set<string>();

  constructor(private readonly d: PoolClaimsDeps) {}

  get synced(): boolean {
    return this.d.index.synced;
  }

  boundPod(session: SandboxSession): PodView | undefined {
    return this.d.index.boundTo(sessionIdentity(session), session.status?.podName);
  }

  choose(session: SandboxSession): PoolChoice {
    const namespace = session.metadata.namespace ?? '';
    const named = session.spec.poolRef?.name;
    const pool = named ? this.d.index.pool(namespace, named) : defaultPool(this.d.index.poolsIn(namespace));
    if (named && (!pool || pool.metadata.deletionTimestamp)) return { kind: 'missing', name: named };
    if (!pool || (!named && !fitsTemplate(session.spec, pool))) return { kind: 'none' };
    return { kind: 'pool', name: pool.metadata.name, coldSpec: templateSpec(pool, session.spec) };
  }

  async claim(request: ClaimRequest): Promise<Claim> {
    const { pool: poolName, ref } = request;
    const now = this.d.now ?? Date.now;
    const started = now();
    const pool = this.d.index.pool(ref.namespace, poolName);
    const failed: string[] = [];
    const tried = new Set<string>();
    const key = `${ref.namespace}/${poolName}`;
    this.d.hold?.claimStarted(key);
    try {
      for (let attempt = 0; pool && attempt < MAX_ATTEMPTS; attempt++) {
        const candidate = this.pick(pool, tried);
        if (!candidate) break;
        tried.add(candidate.metadata.uid);
        const pod = await this.tryOne(candidate, request, failed);
        if (pod) {
          this.d.metrics.claimed(ref.namespace, poolName, 'hit', (now() - started) / 1000);
          return { pod, failed };
        }
      }
      this.d.metrics.claimed(ref.namespace, poolName, 'miss');
      return { failed };
    } finally {
      // The pool's reconcile, woken by the claim patch, is held until this settles (refill-hold.ts).
      this.d.hold?.claimEnded(key, now());
    }
  }

  async confirm(pod: PodView, ref: SessionRef, content: BindContent): Promise<Confirmation> {
    // The token goes only to a Pod that is exactly the session's (ADR 0027): anything else is a
    // caller's bug, never a reason to send it, nor to delete a Pod that is not ours.
    if (!controlledBySession(pod.metadata.namespace, pod.metadata.controller, ref))
      throw new Error(`Pod ${pod.metadata.namespace}/${pod.metadata.name} is not controlled by the session`);
    if (!pod.podIP || !isPodReady(pod)) return 'unknown';
    const status = await this.d.bind.status(pod.podIP, content.token);
    if (typeof status === 'object') return status.session.uid === ref.uid ? 'bound' : 'lost';
    if (status === 'failed') return 'unknown';
    // Refused: not bound to this session. Bound now if the claim stopped before its bind.
    const outcome = await this.d.bind.bind(pod.podIP, this.d.signer.sign(payload(pod, ref, content)));
    if (outcome === 'bound') return 'bound';
    return outcome === 'refused' ? 'lost' : 'unknown';
  }

  async discard(pod: PodView): Promise<void> {
    await this.d.writer.deletePod(pod, false);
  }

  /**
   * An available warm Pod of the pool (exactly: in the pool's namespace, controller reference =
   * the pool; the index's warmPods already asks that, and it is asked again here because this
   * Pod is about to receive a session token) not reserved by another claim nor tried by this one.
   */
  private pick(pool: PoolView, tried: Set<string>): PoolPodView | undefined {
    const hash = this.d.hashOf(pool);
    return this.d.index
      .warmPods(pool)
      .find(
        (p) =>
          isAvailable(p, hash) &&
          controlledByPool(p.metadata.namespace, p.metadata.controller, pool.metadata) &&
          !this.reserved.has(p.metadata.uid) &&
          !tried.has(p.metadata.uid),
      );
  }

  /**
   * Claims and binds one Pod; undefined when it could not be (the reason is counted and logged).
   *
   * The claim patch and the bind go out together (ADR 0016, "Claim latency"): the bind does not
   * depend on the patch's answer (it names the Pod by the UID already known), and what decides who
   * gets a Pod is still the patch (resourceVersion) and the agent's single bind, each on its own.
   * So the outcomes are: patched and bound (claimed); patched, not bound (the Pod is this session's
   * and serves nobody: deleted, as before); not patched and bound (the Pod serves this session's
   * token but belongs to someone else or still to the pool: deleted, since nobody else can bind
   * it now); not patched, not bound (someone else won the Pod, or it is gone: left alone).
   */
  private async tryOne(
    candidate: PoolPodView,
    { ref, content, onBound }: ClaimRequest,
    failed: string[],
  ): Promise<PoolPodView | undefined> {
    const { uid, name, namespace } = candidate.metadata;
    const pool = candidate.pool ?? '';
    this.reserved.add(uid);
    try {
      const signed = this.d.signer.sign(payload(candidate, ref, content));
      const patch = this.d.writer.claimPod(candidate, ref);
      const bind = this.d.bind.bind(candidate.podIP ?? '', signed);
      // Ready is written as soon as the agent accepted, beside the patch (claim-phase.ts).
      const published = bind.then((outcome) => (outcome === 'bound' ? onBound?.(candidate) : undefined));
      const [claimed, outcome] = await Promise.all([patch, bind, published]);
      if (claimed === 'conflict' || claimed === 'gone') {
        this.d.metrics.claimed(namespace, pool, 'conflict');
        if (outcome === 'bound' && claimed === 'conflict') {
          this.d.logger.warn('a warm pod bound while its claim lost; deleting it', {
            namespace,
            session: ref.name,
            pod: name,
          });
          await this.d.writer.deletePod(candidate, false);
        }
        return undefined;
      }
      this.d.index.applyPod(claimed, 'updated');
      this.d.wake(namespace, pool);
      if (outcome === 'bound') return claimed;
      failed.push(name);
      this.d.metrics.claimed(namespace, pool, 'bind_failed');
      this.d.logger.warn('bind of a claimed warm pod failed; deleting it', {
        namespace,
        session: ref.name,
        pod: name,
        outcome,
      });
      await this.d.writer.deletePod(claimed, false);
      return undefined;
    } finally {
      this.reserved.delete(uid);
    }
  }
}

/**
 * The bind payload of a Pod for a session: its identity, the session's, the token, and (when the
 * session has them) its env and startup command. The CRD and env-sources.ts bound them so that
 * the signed request stays under MAX_BIND_BODY_BYTES (wire/bind.ts).
 */
function payload(pod: PodView, ref: SessionRef, content: BindContent): BindPayload {
  const { namespace, name, uid } = pod.metadata;
  const out: BindPayload = {
    version: 1,
    pod: { namespace, name, uid },
    session: { namespace: ref.namespace, name: ref.name, uid: ref.uid },
    token: content.token,
  };
  if (content.env.length > 0) out.env = content.env.map((e) => ({ name: e.name, value: e.value }));
  if (content.startup !== undefined) out.startup = { command: content.startup };
  return out;
}
