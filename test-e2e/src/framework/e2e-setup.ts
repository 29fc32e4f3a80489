import { join } from 'node:path';

import * as k8s from '@kubernetes/client-node';

import { REPO_ROOT } from '@sandbox-platform/test-support';

/**
 * The kubeconfig the e2e specs run against: E2E_KUBECONFIG (any cluster), else the local
 * cluster's ($LOCALKUBE_DIR/kubeconfig, default .localkube/kubeconfig, written by
 * `make cluster-up`).
 */
export function e2eKubeconfig(): string {
  if (process.env.E2E_KUBECONFIG) return process.env.E2E_KUBECONFIG;
  return join(process.env.LOCALKUBE_DIR ?? join(REPO_ROOT, '.localkube'), 'kubeconfig');
}

/**
 * jest globalSetup of the e2e tier. It checks that the cluster answers and exports KUBECONFIG to
 * the specs. This is the hook where the platform (operator, api-gateway) gets deployed before
 * the specs run, once those e2e specs exist.
 */
export default async function e2eSetup(): Promise<void> {
  const kubeconfig = e2eKubeconfig();
  const kc = new k8s.KubeConfig();
  try {
    kc.loadFromFile(kubeconfig);
    await kc.makeApiClient(k8s.CoreV1Api).listNamespace({ limit: 1 });
  } catch (err) {
    throw new Error(
      `e2e: the cluster of ${kubeconfig} is not reachable; start the local one with \`make cluster-up\` ` +
        'or point E2E_KUBECONFIG at a running cluster',
      { cause: err },
    );
  }
  process.env.KUBECONFIG = kubeconfig;
}
