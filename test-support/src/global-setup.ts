import * as k8s from '@kubernetes/client-node';

import { applyCrds, CRDS_DIR } from './crds.js';
import { startControlPlane } from './localkube.js';
import type { RunningControlPlane } from './localkube.js';

/** Where globalSetup leaves the running control plane for globalTeardown (same jest process). */
export const CONTROL_PLANE_KEY = Symbol.for('sandbox-platform.localkube.controlPlane');

type GlobalWithControlPlane = typeof globalThis & { [CONTROL_PLANE_KEY]?: RunningControlPlane };

/**
 * jest globalSetup of the integration tier. Starts a control-plane-only localkube (etcd,
 * kube-apiserver, kube-controller-manager; no kubelet, so tests may write pod status) in a temp
 * dir on free ports, applies crds/*.yaml and waits for them to be Established, and exports
 * KUBECONFIG to the test workers. With INTEGRATION_KUBECONFIG set, that cluster is used instead
 * (the CRDs are still applied to it).
 */
export default async function globalSetup(): Promise<void> {
  const external = process.env.INTEGRATION_KUBECONFIG;
  let kubeconfig: string;
  if (external) {
    kubeconfig = external;
  } else {
    const started = Date.now();
    const cp = await startControlPlane({ crdDir: CRDS_DIR });
    (globalThis as GlobalWithControlPlane)[CONTROL_PLANE_KEY] = cp;
    kubeconfig = cp.kubeconfig;
    process.stderr.write(
      `\n[localkube] control plane ready in ${Date.now() - started} ms (state: ${cp.dir})\n`,
    );
  }
  // Workers are forked after globalSetup and inherit the environment; runInBand shares it.
  process.env.KUBECONFIG = kubeconfig;
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(kubeconfig);
  await applyCrds(kc);
}
