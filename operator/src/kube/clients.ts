/**
 * client-node API clients for the operator, built from one KubeConfig with two deliberate changes
 * from `kc.makeApiClient`:
 *
 * - one keep-alive HTTPS agent shared by every request. client-node 1.4 builds a new agent per
 *   request (KubeConfig.applySecurityAuthentication -> createAgent), which means a new TCP+TLS
 *   connection per API call; at hundreds of creates per second that handshake dominates. The
 *   agent keeps the TLS options client-node derived (CA, client certificate, servername,
 *   skip-verify); authentication headers are still applied per request by the KubeConfig, so
 *   rotating service-account tokens keep working.
 * - a timeout on every request (AbortSignal), so a hung call cannot hold a worker forever.
 *
 * Watches (informers) use client-node's Watch with its own long-lived connection per watch.
 */
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent, type AgentOptions } from 'node:https';

import * as k8s from '@kubernetes/client-node';

/** The API groups the operator talks to. */
export interface KubeClients {
  readonly core: k8s.CoreV1Api;
  readonly custom: k8s.CustomObjectsApi;
  readonly coordination: k8s.CoordinationV1Api;
  readonly events: k8s.EventsV1Api;
}

/** Client options. */
export interface KubeClientOptions {
  /** Per-request timeout. */
  readonly timeoutMs: number;
  /** Most concurrent connections to the API server. */
  readonly maxSockets?: number;
}

/** Builds the API clients. */
export function createKubeClients(kc: k8s.KubeConfig, opts: KubeClientOptions): KubeClients {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('kubeconfig has no current cluster');
  const config = k8s.createConfiguration({
    baseServer: new k8s.ServerConfiguration(cluster.server, {}),
    authMethods: { default: new KeepAliveAuth(kc, opts.maxSockets ?? 64) },
    promiseMiddleware: [timeoutMiddleware(opts.timeoutMs)],
  });
  return {
    core: new k8s.CoreV1Api(config),
    custom: new k8s.CustomObjectsApi(config),
    coordination: new k8s.CoordinationV1Api(config),
    events: new k8s.EventsV1Api(config),
  };
}

/** Per-call options for a JSON merge patch. */
export const MERGE_PATCH = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);

type PromiseMiddleware = NonNullable<
  NonNullable<Parameters<typeof k8s.createConfiguration>[0]>['promiseMiddleware']
>[number];

function timeoutMiddleware(ms: number): PromiseMiddleware {
  return {
    pre: (ctx: k8s.RequestContext) => {
      ctx.setSignal(AbortSignal.timeout(ms));
      return Promise.resolve(ctx);
    },
    post: (res: k8s.ResponseContext) => Promise.resolve(res),
  };
}

/** Applies the KubeConfig's authentication, then swaps in one shared keep-alive agent. */
class KeepAliveAuth implements k8s.SecurityAuthentication {
  private agent?: HttpAgent;

  constructor(
    private readonly kc: k8s.KubeConfig,
    private readonly maxSockets: number,
  ) {}

  getName(): string {
    return 'kubeconfig-keepalive';
  }

  async applySecurityAuthentication(context: k8s.RequestContext): Promise<void> {
    await this.kc.applySecurityAuthentication(context);
    this.agent ??= this.keepAlive(context.getAgent());
    context.setAgent(this.agent);
  }

  private keepAlive(fresh: HttpAgent | undefined): HttpAgent {
    const options = { ...((fresh as { options?: AgentOptions } | undefined)?.options ?? {}) };
    // Idle connections are kept up to maxSockets: closing the ones above a lower limit after a
    // burst would cost new TLS handshakes (a few ms of CPU each) at the next one.
    const common = { keepAlive: true, maxSockets: this.maxSockets, maxFreeSockets: this.maxSockets };
    return fresh instanceof HttpsAgent ? new HttpsAgent({ ...options, ...common }) : new HttpAgent(common);
  }
}
