/**
 * e2e: cluster DNS. A pod with the default dnsPolicy (ClusterFirst) resolves the `kubernetes`
 * Service, a Service of its own namespace by short name and by FQDN, and gets NXDOMAIN for a name
 * outside the cluster: localkube's CoreDNS forwards nothing (no query leaves the machine).
 *
 * The resolver is python3's socket.getaddrinfo in the sandbox-agent image (glibc's resolver, as
 * every program in a sandbox uses it). On another cluster the last check is NOT RUN (recorded in
 * the e2e summary): its DNS forwards outside names upstream.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import {
  containerTerminated,
  createTestNamespace,
  kubeClients,
  testboxPod,
  waitForPod,
  type TestNamespace,
} from '../../src/framework/index.js';
import { itOnLocal } from '../../src/framework/not-run.js';

const AGENT_IMAGE = 'localhost/sandbox-platform/sandbox-agent:dev';

/** A python script that prints `name address` or `name error:<gaierror>` per name. */
function resolveScript(names: string[]): string {
  return [
    'import socket',
    `for n in ${JSON.stringify(names)}:`,
    '    try:',
    '        print(n, socket.getaddrinfo(n, None, socket.AF_INET)[0][4][0])',
    '    except socket.gaierror as e:',
    "        print(n, 'error:' + str(e.args[0]))",
  ].join('\n');
}

describe('cluster DNS (CoreDNS, Service kube-system/kube-dns)', () => {
  const { core } = kubeClients();
  let ns: TestNamespace;
  let lines: Map<string, string>;
  let echoClusterIP = '';
  let kubernetesIP = '';

  beforeAll(async () => {
    ns = await createTestNamespace(core, { prefix: 'dns' });
    const svc = await core.createNamespacedService({
      namespace: ns.name,
      body: { metadata: { name: 'echo' }, spec: { selector: { app: 'echo' }, ports: [{ port: 80 }] } },
    });
    echoClusterIP = svc.spec!.clusterIP!;
    kubernetesIP = (await core.readNamespacedService({ name: 'kubernetes', namespace: 'default' })).spec!
      .clusterIP!;
    const names = [
      'kubernetes.default.svc.cluster.local',
      'kubernetes.default',
      'echo',
      `echo.${ns.name}.svc.cluster.local`,
      'no-such-service',
      'example.com',
    ];
    await core.createNamespacedPod({
      namespace: ns.name,
      body: testboxPod('resolver', ['python3', '-c', resolveScript(names)], (p) => {
        p.spec!.containers[0]!.image = AGENT_IMAGE;
      }),
    });
    await waitForPod(
      core,
      { namespace: ns.name, name: 'resolver' },
      containerTerminated('Completed'),
      120_000,
    );
    const log = await core.readNamespacedPodLog({ name: 'resolver', namespace: ns.name });
    lines = new Map(
      log
        .trim()
        .split('\n')
        .map((l) => l.split(' ') as [string, string]),
    );
  }, 180_000);

  afterAll(async () => {
    await ns?.cleanup();
  });

  it('resolves the kubernetes Service by FQDN and by the search path', () => {
    expect(lines.get('kubernetes.default.svc.cluster.local')).toBe(kubernetesIP);
    expect(lines.get('kubernetes.default')).toBe(kubernetesIP);
  });

  it("resolves a Service of the pod's namespace by short name and FQDN", () => {
    expect(lines.get('echo')).toBe(echoClusterIP);
    expect(lines.get(`echo.${ns.name}.svc.cluster.local`)).toBe(echoClusterIP);
  });

  it('answers a missing Service with "not found", not a timeout', () => {
    // EAI_NONAME (-2): a definite answer; EAI_AGAIN (-3) would mean the server did not answer.
    expect(lines.get('no-such-service')).toBe('error:-2');
  });

  itOnLocal('forwards no outside name upstream: example.com is NXDOMAIN', () => {
    expect(lines.get('example.com')).toBe('error:-2');
  });
});
