/**
 * The gateway's client-node REST clients, with a deadline on every call. client-node sets none: a
 * call whose connection stops answering without a FIN or RST (an API server killed mid-call, a
 * packet dropped while the node's policy chains are rebuilt) waits forever, and the caller's
 * request with it. The CI run of 285644c most likely met one: after a SIGKILL of the API server,
 * one session create was held by the gateway until the test client's own 300 s header timeout.
 * The watches are not affected: client-node's Watch does not go through this client.
 */
import * as k8s from '@kubernetes/client-node';

/** The SandboxSession REST client of the KubeConfig's cluster; each call aborted after `timeoutMs`. */
export function makeCustomObjectsApi(kc: k8s.KubeConfig, timeoutMs: number): k8s.CustomObjectsApi {
  return new k8s.CustomObjectsApi(deadlineConfiguration(kc, timeoutMs));
}

/** The core REST client (the Pod caches' LISTs); each call aborted after `timeoutMs`. */
export function makeCoreV1Api(kc: k8s.KubeConfig, timeoutMs: number): k8s.CoreV1Api {
  return new k8s.CoreV1Api(deadlineConfiguration(kc, timeoutMs));
}

function deadlineConfiguration(kc: k8s.KubeConfig, timeoutMs: number): k8s.Configuration {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('kubeconfig has no current cluster');
  return k8s.createConfiguration({
    baseServer: new k8s.ServerConfiguration(cluster.server, {}),
    // The KubeConfig authenticates each request itself, as in kc.makeApiClient.
    authMethods: { default: kc },
    promiseMiddleware: [
      {
        pre: (ctx: k8s.RequestContext) => {
          ctx.setSignal(AbortSignal.timeout(timeoutMs));
          return Promise.resolve(ctx);
        },
        post: (res: k8s.ResponseContext) => Promise.resolve(res),
      },
    ],
  });
}
