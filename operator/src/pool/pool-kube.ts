/**
 * The pool's writes to the API server (the only pool code that does I/O besides the informers):
 * warm Pod creates, the claim patch, deletes with preconditions, and the pool status.
 *
 * The claim is one merge patch of the warm Pod carrying the resourceVersion the claimer saw: the
 * API server applies it only to exactly that version (409 otherwise), so of two claims of one Pod
 * (two sessions, or a claim racing the pool's own delete) exactly one succeeds. It replaces the
 * ownerReferences (the session becomes the controller: the garbage collector deletes the Pod with
 * the session, and never with the pool) and adds the session label.
 */
import type * as k8s from '@kubernetes/client-node';
import {
  GROUP,
  LABELS,
  POOL_PLURAL,
  VERSION,
  sessionLabelValue,
  type SandboxPoolStatus,
} from '@sandbox-platform/api';

import { AlreadyExistsError, is409, isNotFound, QuotaRefusedError, quotaRefusal } from '../kube/errors.js';
import type { JsonClient } from '../kube/json-client.js';
import type { WriteOutcome } from '../kube/ports.js';
import { controllerRef, type SessionRef } from '../resources/metadata.js';
import { projectPoolPod, type PoolPodView, type PoolView } from './pool-view.js';

/** The claim's answer: the claimed Pod, or why not (changed since it was seen; gone). */
export type ClaimOutcome = PoolPodView | 'conflict' | 'gone';

/** The pool's writes. */
export interface PoolWriter {
  /** Creates a warm Pod; AlreadyExistsError when the name is taken, QuotaRefusedError when refused by a quota. */
  createPod(namespace: string, body: k8s.V1Pod): Promise<PoolPodView>;
  /** Moves a warm Pod to the session, only if it is still exactly the version seen. */
  claimPod(pod: PoolPodView, session: SessionRef): Promise<ClaimOutcome>;
  /**
   * Deletes a Pod if it is still this UID, and, when `exact`, still this resourceVersion (a warm
   * Pod the pool removes: never one claimed meanwhile).
   */
  deletePod(pod: PoolPodView, exact: boolean): Promise<WriteOutcome>;
  /** Writes the pool's status (the operator is its only writer). */
  patchStatus(pool: PoolView, status: SandboxPoolStatus): Promise<void>;
}

/** The clients the writer uses. */
export interface PoolKubeClients {
  readonly core: k8s.CoreV1Api;
  readonly json: JsonClient;
}

/** The writer on the API server. */
export function createPoolWriter({ core, json }: PoolKubeClients): PoolWriter {
  return {
    createPod: async (namespace, body) => {
      try {
        return required(projectPoolPod(await json.create(`/api/v1/namespaces/${namespace}/pods`, body)));
      } catch (err) {
        const name = body.metadata?.name ?? '';
        if (is409(err)) throw new AlreadyExistsError(`Pod ${name} already exists`, { cause: err });
        const quota = quotaRefusal(err);
        if (quota !== undefined) throw new QuotaRefusedError('Pod', name, quota, { cause: err });
        throw new Error(`create warm Pod ${name}`, { cause: err });
      }
    },
    claimPod: async (pod, session) => {
      const { namespace, name, resourceVersion } = pod.metadata;
      const patch = {
        metadata: {
          resourceVersion,
          labels: { [LABELS.session]: sessionLabelValue(session.name) },
          ownerReferences: [controllerRef(session)],
        },
      };
      try {
        return required(projectPoolPod(await json.mergePatch(podPath(namespace, name), patch)));
      } catch (err) {
        if (isNotFound(err)) return 'gone';
        if (is409(err)) return 'conflict';
        throw new Error(`claim warm Pod ${name}`, { cause: err });
      }
    },
    deletePod: async (pod, exact) => {
      const { namespace, name, uid, resourceVersion } = pod.metadata;
      try {
        await core.deleteNamespacedPod({
          namespace,
          name,
          body: { preconditions: exact ? { uid, resourceVersion } : { uid } },
        });
        return 'done';
      } catch (err) {
        if (isNotFound(err) || is409(err)) return 'gone';
        throw new Error(`delete pool Pod ${name}`, { cause: err });
      }
    },
    patchStatus: async (pool, status) => {
      const { namespace, name } = pool.metadata;
      const path = `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/${POOL_PLURAL}/${name}/status`;
      try {
        await json.mergePatch(path, { status });
      } catch (err) {
        if (isNotFound(err)) return;
        throw new Error(`write status of SandboxPool ${name}`, { cause: err });
      }
    },
  };
}

function podPath(namespace: string, name: string): string {
  return `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(name)}`;
}

function required(view: PoolPodView | undefined): PoolPodView {
  if (!view) throw new Error('the API server returned an incomplete Pod');
  return view;
}
