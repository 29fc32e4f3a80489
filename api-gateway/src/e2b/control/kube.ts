/**
 * The Kubernetes calls of the E2B control API that the session store does not make: whether a
 * SandboxPool exists (template lookup; needs `get` on sandboxpools in each served namespace) and
 * merge patches of a session's lifecycle fields and metadata annotation. Each call has the
 * gateway's API deadline; failures map like the store's (kube-errors.ts).
 */
import * as k8s from '@kubernetes/client-node';
import { ANNOTATIONS, GROUP, PLURAL, POOL_PLURAL, VERSION, type SandboxSession } from '@sandbox-platform/api';

import { ProblemError } from '../../errors.js';
import { makeCustomObjectsApi } from '../../sessions/kube-api.js';
import { apiStatus, kubeFailure } from '../../sessions/kube-errors.js';
import type { PoolLookup } from './templates.js';
import type { LifecycleFields } from './lifecycle.js';

/** The writes the control API makes besides the session service's. */
export interface SessionPatcher {
  /** Sets lifecycle fields (and stamps activity, so the idle timeout starts now). Undefined when gone. */
  setLifecycle(namespace: string, name: string, fields: LifecycleFields): Promise<SandboxSession | undefined>;
  /** Sets annotations. Undefined when gone. */
  annotate(
    namespace: string,
    name: string,
    annotations: Record<string, string>,
  ): Promise<SandboxSession | undefined>;
}

/** Pools and patches through the API server. */
export class E2bKube implements PoolLookup, SessionPatcher {
  private readonly api: k8s.CustomObjectsApi;

  constructor(kubeConfig: k8s.KubeConfig, timeoutMs: number) {
    this.api = makeCustomObjectsApi(kubeConfig, timeoutMs);
  }

  async poolExists(namespace: string, name: string): Promise<boolean> {
    try {
      await this.api.getNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace,
        plural: POOL_PLURAL,
        name,
      });
      return true;
    } catch (err) {
      if (apiStatus(err) === 404) return false;
      if (apiStatus(err) === 403) {
        throw new ProblemError('internal', undefined, {
          cause: new Error(`the gateway may not read sandboxpools in ${namespace} (chart RBAC)`, {
            cause: err,
          }),
        });
      }
      throw kubeFailure(err, 'read sandbox pool');
    }
  }

  setLifecycle(
    namespace: string,
    name: string,
    fields: LifecycleFields,
  ): Promise<SandboxSession | undefined> {
    return this.patch(namespace, name, {
      spec: fields,
      metadata: { annotations: { [ANNOTATIONS.lastActivity]: new Date().toISOString() } },
    });
  }

  annotate(
    namespace: string,
    name: string,
    annotations: Record<string, string>,
  ): Promise<SandboxSession | undefined> {
    return this.patch(namespace, name, { metadata: { annotations } });
  }

  private async patch(namespace: string, name: string, body: object): Promise<SandboxSession | undefined> {
    try {
      return (await this.api.patchNamespacedCustomObject(
        {
          group: GROUP,
          version: VERSION,
          namespace,
          plural: PLURAL,
          name,
          body,
          fieldManager: 'sandbox-gateway-e2b',
        },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      )) as SandboxSession;
    } catch (err) {
      if (apiStatus(err) === 404) return undefined;
      throw kubeFailure(err, 'patch session');
    }
  }
}
