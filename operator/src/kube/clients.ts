/**
 * client-node API clients for the operator, built from one KubeConfig with three deliberate
 * changes from `kc.makeApiClient` (figures: docs/benchmarks.md, "bench-operator"):
 *
 * - one keep-alive HTTPS agent shared by every request. client-node 1.4 builds a new agent per
 *   request (KubeConfig.applySecurityAuthentication -> createAgent), which means a new TCP+TLS
 *   connection per API call; at hundreds of creates per second that handshake dominates. The
 *   agent keeps the TLS options client-node derived (CA, client certificate, servername,
 *   skip-verify).
 * - the KubeConfig's authentication (Authorization and impersonation headers, from a token file,
 *   an exec plugin or the kubeconfig) is applied at most once per AUTH_REUSE_MS and reused in
 *   between: client-node re-reads and re-decodes the credentials on every call otherwise.
 *   Rotating service-account tokens still take effect within that second.
 * - a timeout on every request (AbortSignal), so a hung call cannot hold a worker forever.
 *
 * The hot writes of a reconcile (Secret and Pod creates, status patches) go through `json`
 * (json-client.ts): the same server, agent and authentication, without client-node's model
 * (de)serialization, which costs about half the client CPU of a create (docs/adr/0007).
 * Watches (informers) use client-node's Watch with its own long-lived connection per watch.
 */
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent, type AgentOptions } from 'node:https';

import * as k8s from '@kubernetes/client-node';

import { createJsonClient, type JsonClient } from './json-client.js';

/** The API groups the operator talks to. */
export interface KubeClients {
  readonly core: k8s.CoreV1Api;
  readonly custom: k8s.CustomObjectsApi;
  readonly coordination: k8s.CoordinationV1Api;
  readonly events: k8s.EventsV1Api;
  /** StorageClass reads (whether a workspace's class exists). */
  readonly storage: k8s.StorageV1Api;
  /** RuntimeClass reads (whether the default RuntimeClass exists). */
  readonly node: k8s.NodeV1Api;
  /** Plain JSON requests for the hot writes. */
  readonly json: JsonClient;
}

/** Client options. */
export interface KubeClientOptions {
  /** Per-request timeout. */
  readonly timeoutMs: number;
  /** Most concurrent connections to the API server. */
  readonly maxSockets?: number;
}

/** How long applied authentication headers are reused. */
export const AUTH_REUSE_MS = 1000;

/** Builds the API clients. */
export function createKubeClients(kc: k8s.KubeConfig, opts: KubeClientOptions): KubeClients {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('kubeconfig has no current cluster');
  const auth = new SharedAuth(kc, opts.maxSockets ?? 64);
  const config = k8s.createConfiguration({
    baseServer: new k8s.ServerConfiguration(cluster.server, {}),
    authMethods: { default: auth },
    promiseMiddleware: [timeoutMiddleware(opts.timeoutMs)],
  });
  return {
    core: new k8s.CoreV1Api(config),
    custom: new k8s.CustomObjectsApi(config),
    coordination: new k8s.CoordinationV1Api(config),
    events: new k8s.EventsV1Api(config),
    storage: new k8s.StorageV1Api(config),
    node: new k8s.NodeV1Api(config),
    json: createJsonClient({ server: cluster.server, auth, timeoutMs: opts.timeoutMs }),
  };
}

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

/** What a request needs to reach the API server as the KubeConfig's user. */
export interface RequestAuth {
  /** Authentication headers (reused for up to AUTH_REUSE_MS). */
  headers(): Promise<Readonly<Record<string, string>>>;
  /** The shared keep-alive agent (available once headers() resolved). */
  agent(): HttpAgent;
}

/** The KubeConfig's authentication, applied at most once per AUTH_REUSE_MS, and one shared agent. */
class SharedAuth implements k8s.SecurityAuthentication, RequestAuth {
  private shared?: HttpAgent;
  private cached?: { headers: Promise<Record<string, string>>; until: number };

  constructor(
    private readonly kc: k8s.KubeConfig,
    private readonly maxSockets: number,
  ) {}

  getName(): string {
    return 'kubeconfig-keepalive';
  }

  async applySecurityAuthentication(context: k8s.RequestContext): Promise<void> {
    for (const [k, v] of Object.entries(await this.headers())) context.setHeaderParam(k, v);
    context.setAgent(this.agent());
  }

  headers(): Promise<Record<string, string>> {
    const now = Date.now();
    if (!this.cached || now >= this.cached.until) {
      const headers = this.apply();
      this.cached = { headers, until: now + AUTH_REUSE_MS };
      // A failed refresh (e.g. an exec plugin error) is not reused: the next call tries again.
      headers.catch(() => {
        if (this.cached?.headers === headers) this.cached = undefined;
      });
    }
    return this.cached.headers;
  }

  agent(): HttpAgent {
    if (!this.shared) throw new Error('SharedAuth.agent() before headers() resolved');
    return this.shared;
  }

  private async apply(): Promise<Record<string, string>> {
    const scratch = new k8s.RequestContext(this.kc.getCurrentCluster()?.server ?? '', k8s.HttpMethod.GET);
    await this.kc.applySecurityAuthentication(scratch);
    this.shared ??= this.keepAlive(scratch.getAgent());
    return { ...scratch.getHeaders() };
  }

  private keepAlive(fresh: HttpAgent | undefined): HttpAgent {
    const options = { ...((fresh as { options?: AgentOptions } | undefined)?.options ?? {}) };
    // Idle connections are kept up to maxSockets: closing the ones above a lower limit after a
    // burst would cost new TLS handshakes (a few ms of CPU each) at the next one.
    const common = { keepAlive: true, maxSockets: this.maxSockets, maxFreeSockets: this.maxSockets };
    return fresh instanceof HttpsAgent ? new HttpsAgent({ ...options, ...common }) : new HttpAgent(common);
  }
}
