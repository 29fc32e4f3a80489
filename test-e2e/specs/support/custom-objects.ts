/**
 * The platform's custom objects (SandboxSession, SandboxPool) through the Kubernetes API for the
 * e2e specs. Reads answer undefined when the object does not exist (a deleted session or pool is
 * an expected state to wait for) and throw every other error.
 */
import {
  GROUP,
  PLURAL,
  POOL_KIND,
  POOL_PLURAL,
  VERSION,
  type SandboxPool,
  type SandboxPoolSpec,
  type SandboxSession,
} from '@sandbox-platform/api';

import { isNotFound, type KubeClients } from '../../src/framework/index.js';

async function readCustomObject<T>(
  kube: KubeClients,
  plural: string,
  namespace: string,
  name: string,
): Promise<T | undefined> {
  try {
    return (await kube.custom.getNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      plural,
      namespace,
      name,
    })) as T;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/** The SandboxSession `name` in `namespace`, or undefined when there is none. */
export const readSession = (
  kube: KubeClients,
  namespace: string,
  name: string,
): Promise<SandboxSession | undefined> => readCustomObject<SandboxSession>(kube, PLURAL, namespace, name);

/** The SandboxPool `name` in `namespace`, or undefined when there is none. */
export const readPool = (
  kube: KubeClients,
  namespace: string,
  name: string,
): Promise<SandboxPool | undefined> => readCustomObject<SandboxPool>(kube, POOL_PLURAL, namespace, name);

/** Creates the SandboxPool `name` in `namespace`. */
export async function createPool(
  kube: KubeClients,
  namespace: string,
  name: string,
  spec: SandboxPoolSpec,
): Promise<void> {
  await kube.custom.createNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    plural: POOL_PLURAL,
    namespace,
    body: { apiVersion: `${GROUP}/${VERSION}`, kind: POOL_KIND, metadata: { name }, spec },
  });
}

/** Deletes the SandboxPool `name` in `namespace` (its warm Pods go with it). */
export async function deletePool(kube: KubeClients, namespace: string, name: string): Promise<void> {
  await kube.custom.deleteNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    plural: POOL_PLURAL,
    namespace,
    name,
  });
}
