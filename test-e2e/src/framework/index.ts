/** Test framework: control-plane harness, cluster helpers, waitFor and predicates. */
export { applyCrds, CRDS_DIR, isEstablished, readCrds } from './crds.js';
export { apiStatus, isNotFound, kubeClients, loadKubeConfig } from './kube.js';
export type { KubeClients } from './kube.js';
export { localkubeBinary, REPO_ROOT, startControlPlane } from './localkube.js';
export type { ControlPlaneOptions, RunningControlPlane } from './localkube.js';
export { createTestNamespace, TEST_NAMESPACE_LABEL, testNamespaceName } from './namespace.js';
export type { TestNamespace, TestNamespaceOptions } from './namespace.js';
export { predicate, waitFor, WaitTimeoutError } from './wait-for.js';
export type { Predicate, WaitOptions } from './wait-for.js';
export { e2eKubeconfig } from './e2e-setup.js';
export { kubectl } from './kubectl.js';
export type { KubectlResult } from './kubectl.js';
export {
  containerTerminated,
  podPhase,
  podReady,
  TESTBOX_IMAGE,
  testboxPod,
  waitForPod,
  waitForPodGone,
} from './pods.js';
