/**
 * What a tenant with only `edit` in its own namespace can do against another tenant's session
 * (issue 25): plant a Pod there whose controller ownerReference names the victim session, and serve
 * an "agent" at the Pod's IP that says yes to everything and records every request (the victim's
 * token would arrive in one). Plays the kubelet for the planted Pod (status patched, the server on
 * a loopback address of its own, as harness/warm-agents.ts does for warm Pods).
 *
 * The planted Pod also carries a second, non-controller reference under an apiVersion no API
 * serves: the garbage collector cannot resolve it, so it never judges the Pod (it neither deletes
 * it nor strips the reference to the absent victim, which it does within a second otherwise), and
 * the Pod stays exactly as planted, as in the takeover reported in issue 25.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';

import type * as k8s from '@kubernetes/client-node';
import {
  AGENT_PATHS,
  API_VERSION,
  GROUP,
  KIND,
  LABELS,
  MANAGER_NAME,
  POOL_KIND,
  POOL_LABELS,
  POOL_PLURAL,
  VERSION,
  type SandboxSession,
} from '@sandbox-platform/api';

import { isNotFound, predicate, waitFor } from '@sandbox-platform/test-support';
import { runningReady, setPodStatus } from './sessions.js';

/** One request the planted "agent" received. */
export interface Recorded {
  readonly method: string;
  readonly url: string;
  /** The bearer token sent, if any (the victim's session token, were the attack to work). */
  readonly token?: string;
}

/** A recording server standing in for the planted Pod's agent. */
export class PlantedServer {
  readonly requests: Recorded[] = [];
  private server?: http.Server;

  constructor(
    readonly host: string,
    readonly port: number,
    private readonly victim: SandboxSession,
  ) {}

  /** Listens on host:port; answers every bind call as a willing agent bound to the victim would. */
  async start(): Promise<void> {
    const { namespace = '', name = '', uid = '' } = this.victim.metadata;
    this.server = http.createServer((req, res) => {
      const auth = req.headers.authorization;
      this.requests.push({
        method: req.method ?? '',
        url: req.url ?? '',
        token: auth?.startsWith('Bearer ') ? auth.slice(7) : undefined,
      });
      req.resume();
      req.on('end', () => {
        const body = req.url === AGENT_PATHS.bind ? { bound: true, session: { namespace, name, uid } } : {};
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      });
    });
    const server = this.server;
    await new Promise<void>((resolve) => server.listen(this.port, this.host, resolve));
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

/** How the planted Pod names the victim. */
export interface PlantOptions {
  /** apiVersion of the controller reference (default: the served one). */
  readonly apiVersion?: string;
  /** The sandbox.dev/pool label (default 'py'). */
  readonly poolLabel?: string;
  /** Status Ready at this IP (and the server there); undefined: never Ready. */
  readonly readyAt?: string;
}

/** A reference the garbage collector cannot resolve (see the module comment). */
const UNRESOLVABLE = { apiVersion: 'anchor.invalid/v1', kind: 'Anchor', name: 'anchor' } as const;

/** The attacker's namespace: planted Pods, and a barrier through the operator. */
export class Attacker {
  private barriers = 0;

  constructor(
    private readonly core: k8s.CoreV1Api,
    private readonly custom: k8s.CustomObjectsApi,
    readonly namespace: string,
  ) {}

  /** Creates the barrier pool (replicas 0). */
  async setup(): Promise<void> {
    await this.custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      plural: POOL_PLURAL,
      namespace: this.namespace,
      body: {
        apiVersion: API_VERSION,
        kind: POOL_KIND,
        metadata: { name: 'barrier' },
        spec: { replicas: 0 },
      },
    });
  }

  /** Plants a Pod whose controller reference names the victim session. */
  async plant(name: string, victim: SandboxSession, opts: PlantOptions = {}): Promise<k8s.V1Pod> {
    const pod = await this.core.createNamespacedPod({
      namespace: this.namespace,
      body: {
        metadata: {
          name,
          labels: {
            [POOL_LABELS.pool]: opts.poolLabel ?? 'py',
            [LABELS.managedBy]: MANAGER_NAME,
            [LABELS.session]: victim.metadata.name!,
          },
          ownerReferences: [
            {
              apiVersion: opts.apiVersion ?? API_VERSION,
              kind: KIND,
              name: victim.metadata.name!,
              uid: victim.metadata.uid!,
              controller: true,
            },
            { ...UNRESOLVABLE, uid: randomUUID() },
          ],
        },
        spec: { containers: [{ name: 'sandbox', image: 'example.invalid/planted:1' }] },
      },
    });
    if (opts.readyAt) await setPodStatus(this.core, this.namespace, name, runningReady(opts.readyAt));
    return pod;
  }

  /**
   * Returns once the operator's pool-Pod informer of this namespace has seen everything created
   * here before: a Pod naming the barrier pool exactly (replicas 0, no template hash) is deleted
   * by the operator's pool reconcile, and one watch delivers the events of a namespace in order.
   */
  async barrier(): Promise<void> {
    const name = `barrier-${++this.barriers}`;
    const pool = (await this.custom.getNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      plural: POOL_PLURAL,
      namespace: this.namespace,
      name: 'barrier',
    })) as { metadata: { uid: string } };
    await this.core.createNamespacedPod({
      namespace: this.namespace,
      body: {
        metadata: {
          name,
          labels: { [POOL_LABELS.pool]: 'barrier', [LABELS.managedBy]: MANAGER_NAME },
          ownerReferences: [
            {
              apiVersion: API_VERSION,
              kind: POOL_KIND,
              name: 'barrier',
              uid: pool.metadata.uid,
              controller: true,
            },
          ],
        },
        spec: { containers: [{ name: 'sandbox', image: 'example.invalid/barrier:1' }] },
      },
    });
    await waitFor(
      () => this.podExists(name),
      predicate(`the operator deleted ${name}`, (exists) => !exists),
      { timeoutMs: 30_000, intervalMs: 100 },
    );
  }

  /** The planted Pod as it is now (undefined: gone). */
  async read(name: string): Promise<k8s.V1Pod | undefined> {
    try {
      return await this.core.readNamespacedPod({ namespace: this.namespace, name });
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  private async podExists(name: string): Promise<boolean> {
    const pod = await this.read(name);
    return pod !== undefined && !pod.metadata?.deletionTimestamp;
  }
}
