/**
 * The integration environment: a real kube-apiserver (the harness's control plane, via
 * KUBECONFIG), real gateways built with the production wiring (composeDeps), and real sandbox
 * agents started in-process. There is no kubelet and no operator: the test plays both, creating
 * the session's Pod (labelled and controlled by the session, as the operator makes it) and writing
 * its status Ready with a loopback pod IP on which it started an agent whose token is derived from
 * the master key and the session's uid, then patching the session's status to Ready with that Pod
 * and IP (the gateway's Pod identity check ties the two together).
 *
 * Each session gets its own loopback address (127.0.0.2, 127.0.0.3, ...) and all agents share one
 * port, as pods share the agent port on different pod IPs.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import * as k8s from '@kubernetes/client-node';
import {
  API_VERSION,
  CONDITIONS,
  GROUP,
  KIND,
  LABELS,
  PLURAL,
  REASONS,
  VERSION,
  deriveToken,
} from '@sandbox-platform/api';
import type { SandboxSession } from '@sandbox-platform/api';
import type { FastifyInstance } from 'fastify';

// The gateway's and the agent's sources (test support sits above the product packages).
import { buildApp } from '../../api-gateway/src/app.js';
import { ApiKeys } from '../../api-gateway/src/auth/keys.js';
import { composeDeps } from '../../api-gateway/src/compose.js';
import { loadConfig } from '../../api-gateway/src/config.js';
import { WinstonFastifyLogger, silentWinston } from '../../api-gateway/src/logger.js';
import { agentConfig, startAgent, type RunningAgent } from '../../sandbox-agent/src/index.js';
import { createTestNamespace, kubeClients, type KubeClients, type TestNamespace } from '../src/index.js';

/** The master key of the test gateways (what the chart mounts from a Secret). */
export const MASTER_KEY = Buffer.from('integration-master-key-0123456789abcdef');
/** Tenant keys. */
export const KEYS = { a: 'integration-key-tenant-a-0123456789', b: 'integration-key-tenant-b-0123456789' };

/** A free TCP port for every agent of the run. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** One gateway instance (its own informers, as a separate replica would have). */
export interface Gateway {
  app: FastifyInstance;
  url: string;
}

/** Namespaces, clients, gateways and agents of one test file. */
export class GatewayEnv {
  readonly kube: KubeClients = kubeClients();
  nsA!: TestNamespace;
  nsB!: TestNamespace;
  agentPort = 0;
  /** The agents' terminal helper (sandbox-pty); without it their terminal route is refused. */
  ptyHelperPath: string | undefined;
  private readonly gateways: Gateway[] = [];
  private readonly agents: Array<{ agent: RunningAgent; dir: string }> = [];
  private nextHost = 2;

  async setup(): Promise<void> {
    this.nsA = await createTestNamespace(this.kube.core, { prefix: 'gw-a' });
    this.nsB = await createTestNamespace(this.kube.core, { prefix: 'gw-b' });
    this.agentPort = await freePort();
  }

  /** Builds and starts a gateway on the cluster (listening on a free loopback port). */
  async startGateway(env: Record<string, string> = {}): Promise<Gateway> {
    const config = loadConfig({
      GATEWAY_API_KEYS_FILE: '/unused',
      SANDBOX_MASTER_KEY_FILE: '/unused',
      GATEWAY_NAMESPACES: `${this.nsA.name},${this.nsB.name}`,
      GATEWAY_AGENT_PORT: String(this.agentPort),
      GATEWAY_ALLOW_LOOPBACK_POD_IPS: 'true',
      GATEWAY_DEFAULT_WAIT_SECONDS: '10',
      GATEWAY_ACTIVITY_THROTTLE_SECONDS: '1',
      GATEWAY_CONNECT_TIMEOUT_MS: '500',
      ...env,
    });
    const keys = ApiKeys.parse(
      JSON.stringify({
        keys: [
          { id: 'a', key: KEYS.a, namespaces: [this.nsA.name] },
          { id: 'b', key: KEYS.b, namespaces: [this.nsB.name] },
        ],
      }),
      config.namespaces,
    );
    const fresh = (): k8s.KubeConfig => {
      const kc = new k8s.KubeConfig();
      kc.loadFromFile(process.env.KUBECONFIG!);
      return kc;
    };
    const logger = new WinstonFastifyLogger(silentWinston());
    const deps = composeDeps({
      config,
      logger,
      keys,
      masterKey: MASTER_KEY,
      kubeConfig: fresh(),
      streamingKubeConfig: fresh(),
    });
    const app = await buildApp(deps);
    await deps.store.start();
    if (!deps.store.synced()) throw new Error('gateway session cache did not sync');
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    const gw = { app, url };
    this.gateways.push(gw);
    return gw;
  }

  /**
   * Plays the operator for a session: starts a real agent on a fresh loopback address with the
   * session's derived token, creates the session's Pod with that address (Ready), then patches the
   * session's status to Ready with that Pod and address.
   */
  async makeReady(namespace: string, name: string): Promise<{ podIP: string; workspace: string }> {
    const s = await this.read(namespace, name);
    const podIP = await this.startAgentFor(namespace, name, s.metadata.uid!);
    await this.createPod(namespace, { name, uid: s.metadata.uid! }, podIP);
    await this.patchStatus(namespace, name, {
      conditions: [condition('True', REASONS.ready, 'test: ready')],
      podIP,
      podName: `sbs-${name}`,
    });
    return { podIP, workspace: this.agents.at(-1)!.dir };
  }

  /** Starts an agent for a session uid on the next loopback address; returns the address. */
  async startAgentFor(namespace: string, name: string, uid: string): Promise<string> {
    const host = `127.0.0.${this.nextHost++}`;
    const dir = mkdtempSync(join(tmpdir(), 'gw-agent-'));
    const token = deriveToken(MASTER_KEY, { namespace, name, uid });
    const agent = await startAgent(
      agentConfig({
        token,
        host,
        port: this.agentPort,
        workspace: dir,
        logLevel: 'error',
        ...(this.ptyHelperPath ? { ptyHelperPath: this.ptyHelperPath } : {}),
      }),
      {
        logSink: () => undefined,
      },
    );
    this.agents.push({ agent, dir });
    return host;
  }

  /**
   * Plays the operator and the kubelet for a Pod: creates `pod` (default sbs-<session>) in the
   * namespace, labelled with the session and controlled by it (`apiVersion` overrides the
   * reference's, for a forged one), and, unless `ready` is false, reports it Running and Ready
   * with `podIP`. Returns the Pod's name.
   */
  async createPod(
    namespace: string,
    session: { name: string; uid: string },
    podIP: string,
    opts: { pod?: string; apiVersion?: string; ready?: boolean } = {},
  ): Promise<string> {
    const name = opts.pod ?? `sbs-${session.name}`;
    const ownerReferences = [
      {
        apiVersion: opts.apiVersion ?? API_VERSION,
        kind: KIND,
        name: session.name,
        uid: session.uid,
        controller: true,
      },
    ];
    await this.kube.core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name, labels: { [LABELS.session]: session.name }, ownerReferences },
        spec: { containers: [{ name: 'sandbox', image: 'example.invalid/sandbox:1' }] },
      },
    });
    if (opts.ready === false) return name;
    const now = new Date();
    const status: k8s.V1PodStatus = {
      phase: 'Running',
      podIP,
      podIPs: [{ ip: podIP }],
      conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: now }],
    };
    await this.kube.core.patchNamespacedPodStatus(
      { namespace, name, body: { status } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    return name;
  }

  /** Writes the status subresource as the operator would. */
  async patchStatus(
    namespace: string,
    name: string,
    status: NonNullable<SandboxSession['status']>,
  ): Promise<void> {
    await this.kube.custom.patchNamespacedCustomObjectStatus(
      { group: GROUP, version: VERSION, namespace, plural: PLURAL, name, body: { status } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
  }

  /** Reads a session straight from the API server. */
  async read(namespace: string, name: string): Promise<SandboxSession> {
    return (await this.kube.custom.getNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace,
      plural: PLURAL,
      name,
    })) as SandboxSession;
  }

  /** Lists sessions straight from the API server. */
  async list(namespace: string): Promise<SandboxSession[]> {
    const list = (await this.kube.custom.listNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace,
      plural: PLURAL,
    })) as {
      items: SandboxSession[];
    };
    return list.items;
  }

  async teardown(): Promise<void> {
    for (const gw of this.gateways) await gw.app.close();
    for (const { agent, dir } of this.agents) {
      await agent.close(0);
      rmSync(dir, { recursive: true, force: true });
    }
    await this.nsA?.cleanup();
    await this.nsB?.cleanup();
  }
}

/** A Ready-type condition as the operator writes it. */
export function condition(
  status: 'True' | 'False',
  reason: string,
  message: string,
): NonNullable<NonNullable<SandboxSession['status']>['conditions']>[number] {
  return { type: CONDITIONS.ready, status, reason, message, lastTransitionTime: new Date().toISOString() };
}
