/**
 * The baseline: the same client-node setup the operator uses (kube/clients.ts) creating the same
 * Secrets and Pods (resources/ builders) directly, Secret before Pod per session, with as many
 * parallel workers as the operator has.
 */
import type * as k8s from '@kubernetes/client-node';
import { deriveToken, type SandboxSession } from '@sandbox-platform/api';

import { buildPod } from '../src/resources/pod.js';
import type { PodBuildOptions } from '../src/resources/pod-options.js';
import { buildSecret } from '../src/resources/secret.js';

/** Creates `names.length` Secret+Pod pairs in `namespace`; resolves when every create returned. */
export async function createDirectly(
  core: k8s.CoreV1Api,
  namespace: string,
  names: readonly string[],
  opts: { readonly workers: number; readonly masterKey: Buffer; readonly pod: PodBuildOptions },
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < names.length) {
      const name = names[next++]!;
      const uid = `00000000-0000-4000-8000-${String(next).padStart(12, '0')}`;
      const ref = { namespace, name, uid };
      const session: SandboxSession = { metadata: { namespace, name, uid }, spec: {} };
      await core.createNamespacedSecret({
        namespace,
        body: unowned(buildSecret(ref, deriveToken(opts.masterKey, ref))),
      });
      await core.createNamespacedPod({ namespace, body: unowned(buildPod(session, ref, opts.pod)) });
    }
  };
  await Promise.all(Array.from({ length: opts.workers }, worker));
}

/**
 * The same object without its ownerReference: no SandboxSession exists for the baseline, and the
 * garbage collector would delete children of a missing owner during the measurement.
 */
function unowned<T extends { metadata?: k8s.V1ObjectMeta }>(obj: T): T {
  return { ...obj, metadata: { ...obj.metadata, ownerReferences: undefined } };
}
