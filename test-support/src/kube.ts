import * as k8s from '@kubernetes/client-node';

/**
 * Loads the kubeconfig the tests run against: $KUBECONFIG, which the integration globalSetup
 * sets to its control plane and the e2e setup to the local cluster (or the caller's cluster).
 */
export function loadKubeConfig(): k8s.KubeConfig {
  const path = process.env.KUBECONFIG;
  if (!path) {
    throw new Error(
      'KUBECONFIG is not set: run the tests through their jest config (integration: a control plane is ' +
        'started for you; e2e: `make test-e2e` or set KUBECONFIG to a cluster)',
    );
  }
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(path);
  return kc;
}

/** The API clients most tests need, built from one kubeconfig. */
export interface KubeClients {
  kc: k8s.KubeConfig;
  core: k8s.CoreV1Api;
  apps: k8s.AppsV1Api;
  custom: k8s.CustomObjectsApi;
  objects: k8s.KubernetesObjectApi;
}

/** Builds {@link KubeClients} from the given kubeconfig (default: {@link loadKubeConfig}). */
export function kubeClients(kc: k8s.KubeConfig = loadKubeConfig()): KubeClients {
  return {
    kc,
    core: kc.makeApiClient(k8s.CoreV1Api),
    apps: kc.makeApiClient(k8s.AppsV1Api),
    custom: kc.makeApiClient(k8s.CustomObjectsApi),
    objects: k8s.KubernetesObjectApi.makeApiClient(kc),
  };
}

/** HTTP status of a client-node ApiException, or undefined for other errors. */
export function apiStatus(err: unknown): number | undefined {
  return err instanceof k8s.ApiException ? err.code : undefined;
}

/** true when the error is a 404 from the API server. */
export function isNotFound(err: unknown): boolean {
  return apiStatus(err) === 404;
}
