/**
 * e2e (issue 25): the gateway's own egress is fenced. Its Pods send traffic only to sandbox Pods
 * (agent port and the port route's range), the API server, the cluster DNS and the egress proxy's
 * audit port (chart template networkpolicy.yaml, `<gateway>-egress`), so a forged `status.podIP`
 * cannot turn it into a proxy toward anything else, even where the Pod identity check is off.
 *
 * A target Pod that is not a sandbox listens on 8090 (a port the policy allows toward sandbox Pods,
 * so only the destination decides) in a namespace of its own without any NetworkPolicy:
 * - positive controls: a client Pod next to it connects (the target listens and nothing else
 *   fences it), and every gateway Pod reaches a session's agent (the probe itself works there);
 * - every gateway Pod's connection to the target is dropped or refused.
 * Shown failing with the protection off (2026-12-06, local cluster: the policy's egress rules
 * replaced by allow-all, both gateway Pods got `open`; with the policy, `error ECONNREFUSED`, the
 * enforcer's reject).
 *
 * Needs the platform (make platform-up) with networkPolicy.gateway.restrictEgress (the default)
 * on a cluster that enforces NetworkPolicies.
 */
import { randomBytes } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import type { SandboxSession } from '@sandbox-platform/api';

import {
  createTestNamespace,
  kubeClients,
  kubectl,
  podReady,
  testboxPod,
  waitForPod,
  type TestNamespace,
} from '../../src/framework/index.js';
import { gatewayPods } from '../hostile/gateway-process.js';
import { AGENT_IMAGE, deleteSession, gatewayClient, namespaceOf } from '../isolation/support.js';
import { readSession } from '../support/custom-objects.js';

const PLATFORM_NS = process.env.E2E_PLATFORM_NAMESPACE ?? 'sandbox-system';
const RELEASE = process.env.E2E_PLATFORM_RELEASE ?? 'sandbox';
const NS = namespaceOf('e2e');
const READY_MS = 180_000;
const PORT = 8090;
const kube = kubeClients();
const networking = kube.kc.makeApiClient(k8s.NetworkingV1Api);
const suffix = randomBytes(3).toString('hex');
const SESSION = `gw-egress-${suffix}`;
/** The target's neighbour (the positive control), in the target's namespace. */
const CLIENT = 'client';

/**
 * Node script run in a gateway Pod: one TCP connect to argv host:port, 3 s budget. Prints `open`,
 * `timeout` or `error <code>`. Plain CommonJS (`node -e`): the gateway image has node and no shell.
 */
const PROBE = [
  'const net = require("net");',
  'const [host, port] = process.argv.slice(1);',
  'const s = net.connect({ host, port: Number(port) });',
  'const done = (w) => { console.log(w); process.exit(0); };',
  'setTimeout(() => done("timeout"), 3000);',
  's.on("connect", () => done("open"));',
  's.on("error", (e) => done("error " + e.code));',
].join(' ');

async function fromGateway(pod: string, host: string, port: number): Promise<string> {
  const r = await kubectl(['exec', '-n', PLATFORM_NS, pod, '--', 'node', '-e', PROBE, host, String(port)], {
    timeoutMs: 30_000,
  });
  if (r.status !== 0) throw new Error(`kubectl exec in ${pod} failed (${r.status}): ${r.stderr}`);
  return r.stdout.trim();
}

describe("the gateway's egress policy", () => {
  let ns: TestNamespace;
  let targetIP = '';
  let sessionIP = '';

  beforeAll(async () => {
    const policy = await networking
      .readNamespacedNetworkPolicy({
        namespace: PLATFORM_NS,
        name: `${RELEASE}-sandbox-platform-gateway-egress`,
      })
      .catch(() => undefined);
    // Secure by default: the chart renders it unless networkPolicy.gateway.restrictEgress=false.
    expect(policy?.spec?.policyTypes).toEqual(['Egress']);
    const gw = gatewayClient('e2e');
    await gw.createSession({ name: SESSION });
    ns = await createTestNamespace(kube.core, { prefix: 'gw-egress' });
    const listen = `python3 -m http.server ${PORT} --bind 0.0.0.0`;
    const target = testboxPod('target', ['bash', '-c', listen], (p) => {
      p.spec!.containers[0]!.image = AGENT_IMAGE;
    });
    const clientPod = testboxPod(CLIENT, ['sleep', 'infinity'], (p) => {
      p.spec!.containers[0]!.image = AGENT_IMAGE;
    });
    await kube.core.createNamespacedPod({ namespace: ns.name, body: target });
    await kube.core.createNamespacedPod({ namespace: ns.name, body: clientPod });
    const ready = await waitForPod(kube.core, { namespace: ns.name, name: 'target' }, podReady, READY_MS);
    await waitForPod(kube.core, { namespace: ns.name, name: CLIENT }, podReady, READY_MS);
    targetIP = ready.status!.podIP!;
    await gw.waitUntilReady(SESSION, { timeoutMs: READY_MS });
    sessionIP = ((await readSession(kube, NS, SESSION)) as SandboxSession).status?.podIP ?? '';
    expect(sessionIP).not.toBe('');
  }, READY_MS * 2);

  afterAll(async () => {
    await deleteSession(kube, NS, SESSION);
    await ns?.cleanup();
  });

  it('lets a neighbour Pod reach the target (positive control: it listens)', async () => {
    // The server may still be starting when the Pod turns Ready (no probe): a few tries.
    const script = `for i in $(seq 20); do timeout 3 bash -c '</dev/tcp/${targetIP}/${PORT}' && echo open && exit 0; sleep 0.5; done; echo closed`;
    const r = await kubectl(['exec', '-n', ns.name, CLIENT, '--', 'bash', '-c', script], {
      timeoutMs: 90_000,
    });
    expect(r.stdout.trim()).toBe('open');
  });

  it("lets every gateway Pod reach a session's agent (positive control: the probe works there)", async () => {
    const pods = (await gatewayPods(kube.core, PLATFORM_NS, RELEASE)).map((p) => p.metadata!.name!);
    expect(pods.length).toBeGreaterThan(0);
    for (const pod of pods) expect(`${pod}: ${await fromGateway(pod, sessionIP, PORT)}`).toBe(`${pod}: open`);
  });

  it("drops or refuses every gateway Pod's connection to a Pod that is not a sandbox", async () => {
    const pods = (await gatewayPods(kube.core, PLATFORM_NS, RELEASE)).map((p) => p.metadata!.name!);
    const seen = await Promise.all(
      pods.map(async (pod) => `${pod}: ${await fromGateway(pod, targetIP, PORT)}`),
    );
    console.log(`gateway -> ${targetIP}:${PORT} (not a sandbox): ${seen.join(', ')}`);
    for (const line of seen)
      expect(line).toMatch(/: (timeout|error (ECONNREFUSED|EHOSTUNREACH|ENETUNREACH|EPERM))$/);
  });
});
