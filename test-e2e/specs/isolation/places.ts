/**
 * The places the isolation probes run from: the attacking session (an exec through the gateway),
 * and the control places the policy admits: a pod in the gateway's position (the platform
 * namespace, label sandbox.dev/gateway=true: what the sandbox ingress policy admits) and a
 * hostNetwork pod per node (the node's own network: what reaches the kubelet, the API server and
 * pods' probe and metrics ports). Control pods run the sandbox image (bash, timeout, python3: the
 * attacker's tools) with a sleep, and are removed by `stop()`.
 */
import type * as k8s from '@kubernetes/client-node';
import type { SandboxClient } from '@sandbox-platform/client';

import {
  createTestNamespace,
  isNotFound,
  kubectl,
  podReady,
  testboxPod,
  waitForPod,
  type KubeClients,
  type TestNamespace,
} from '../../src/framework/index.js';
import type { Place } from './matrix.js';
import { AGENT_IMAGE, uniqueName } from './support.js';

/** A session of the gateway client: the script runs as an exec in its sandbox. */
export function sessionPlace(gw: SandboxClient, namespace: string, name: string): Place {
  return {
    name: `session ${namespace}/${name}`,
    async run(script) {
      const r = await gw.exec(name, { command: script, timeoutSeconds: 60 });
      if (r.exitCode !== 0) throw new Error(`exec in ${name} failed (${r.exitCode}): ${r.stderr}`);
      return r.stdout;
    },
  };
}

/** A running pod: the script runs with `kubectl exec ... -- bash -c`. */
export function podPlace(label: string, namespace: string, pod: string): Place {
  return {
    name: label,
    async run(script) {
      const r = await kubectl(['exec', '-n', namespace, pod, '--', 'bash', '-c', script], {
        timeoutMs: 60_000,
      });
      if (r.status !== 0) throw new Error(`exec in ${namespace}/${pod} failed (${r.status}): ${r.stderr}`);
      return r.stdout;
    },
  };
}

/** Label on the control pods (they are found and removed by it). */
const CONTROL_LABEL = 'sandbox.dev/e2e-isolation-control';

/** A pod of the sandbox image that sleeps, with a writable /tmp; shaped by `modify`. */
function controlPod(name: string, modify: (pod: k8s.V1Pod) => void): k8s.V1Pod {
  return testboxPod(name, ['sleep', 'infinity'], (p) => {
    const c = p.spec!.containers[0]!;
    c.image = AGENT_IMAGE;
    c.volumeMounts = [{ name: 'tmp', mountPath: '/tmp' }];
    p.spec!.volumes = [{ name: 'tmp', emptyDir: {} }];
    p.metadata!.labels = { ...p.metadata!.labels, [CONTROL_LABEL]: 'true' };
    modify(p);
  });
}

/**
 * The control places of one spec. `gateway()` and `node(nodeName)` create their pod on first use
 * (later calls share it); `stop()` deletes them all.
 */
export class ControlPlaces {
  private gatewayPlace?: Promise<Place>;
  private readonly nodePlaces = new Map<string, Promise<Place>>();
  private nodeNs?: Promise<TestNamespace>;
  private readonly created: Array<{ namespace: string; name: string }> = [];

  constructor(
    private readonly kube: KubeClients,
    private readonly platformNs: string,
  ) {}

  /** The gateway's position: what the sandbox ingress policy admits to the agent and port range. */
  gateway(): Promise<Place> {
    this.gatewayPlace ??= this.start(this.platformNs, uniqueName('iso-gw-position'), (p) => {
      p.metadata!.labels = { ...p.metadata!.labels, 'sandbox.dev/gateway': 'true' };
    }).then((name) => podPlace('gateway position', this.platformNs, name));
    return this.gatewayPlace;
  }

  /** The network of node `nodeName` (a hostNetwork pod scheduled there). */
  node(nodeName: string): Promise<Place> {
    let place = this.nodePlaces.get(nodeName);
    if (!place) {
      place = this.startNodePod(nodeName);
      this.nodePlaces.set(nodeName, place);
    }
    return place;
  }

  private async startNodePod(nodeName: string): Promise<Place> {
    this.nodeNs ??= createTestNamespace(this.kube.core, { prefix: 'iso-node' });
    const ns = (await this.nodeNs).name;
    const name = await this.start(ns, uniqueName('iso-node'), (p) => {
      p.spec!.hostNetwork = true;
      p.spec!.nodeName = nodeName;
    });
    return podPlace(`node ${nodeName}`, ns, name);
  }

  private async start(namespace: string, name: string, modify: (pod: k8s.V1Pod) => void): Promise<string> {
    this.created.push({ namespace, name });
    await this.kube.core.createNamespacedPod({ namespace, body: controlPod(name, modify) });
    await waitForPod(this.kube.core, { namespace, name }, podReady, 120_000);
    return name;
  }

  /** Deletes the control pods and the node pods' namespace. */
  async stop(): Promise<void> {
    await Promise.all(
      this.created.map(({ namespace, name }) =>
        this.kube.core.deleteNamespacedPod({ namespace, name, gracePeriodSeconds: 0 }).catch((err) => {
          if (!isNotFound(err)) throw err;
        }),
      ),
    );
    if (this.nodeNs) await (await this.nodeNs).cleanup();
  }
}
