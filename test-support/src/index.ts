/**
 * @sandbox-platform/test-support: the test and bench helpers shared by workspaces (control-plane
 * harness, CRDs, clients, namespaces, waitFor and predicates, test pods, a pod's processes on this
 * machine, the egress upstream). The gateway's integration environment is `./gateway` (not in this
 * entry: it pulls in the gateway and the agent).
 */
export { applyCrds, CRDS_DIR, isEstablished, readCrds } from './crds.js';
export { apiStatus, isNotFound, kubeClients, loadKubeConfig } from './kube.js';
export type { KubeClients } from './kube.js';
export { localkubeBinary, REPO_ROOT, startControlPlane } from './localkube.js';
export type { ControlPlaneOptions, RunningControlPlane } from './localkube.js';
export { createTestNamespace, TEST_NAMESPACE_LABEL, testNamespaceName } from './namespace.js';
export type { TestNamespace, TestNamespaceOptions } from './namespace.js';
export { predicate, waitFor, WaitTimeoutError } from './wait-for.js';
export type { Predicate, WaitOptions } from './wait-for.js';
export {
  containerTerminated,
  podPhase,
  podReady,
  TESTBOX_IMAGE,
  testboxPod,
  waitForPod,
  waitForPodGone,
} from './pods.js';
export type { PodRef } from './pods.js';
export {
  findPodProcesses,
  podProcesses,
  signalProcesses,
  sigkill,
  sigkillPodProcesses,
} from './pod-processes.js';
export type { PodProcess, PodProcessFilter } from './pod-processes.js';
export {
  host as upstreamHost,
  HTTP_PORT as UPSTREAM_HTTP_PORT,
  HTTPS_PORT as UPSTREAM_HTTPS_PORT,
  startUpstream,
  stopUpstream,
  upstreamCertificates,
  upstreamLog,
  UPSTREAM_NS,
} from './egress-upstream.js';
