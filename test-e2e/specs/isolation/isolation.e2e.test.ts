/**
 * e2e: isolation you can prove. From inside a session (exec through the gateway), every lateral
 * target is tried with a real TCP connection bounded by 3 s, and must be refused or time out:
 * another session's agent (same tenant and another tenant), every port the gateway and operator
 * pods declare (API and probes, and their metrics ports), the API server (its host address and the
 * `kubernetes` Service), the kubelet, and stand-ins for a cloud metadata service and for a DNS
 * server outside the cluster. The gateway still reaches the
 * agent, names resolve through the cluster DNS, and an egress CIDR allowed by the chart's values
 * is reachable until the value is removed again (helm upgrade).
 *
 * With the enforcer switched off (`make test-isolation-unenforced`: localkube
 * --network-policy=false) the same matrix FAILS: every cell opens.
 *
 * Needs the chart installed (`make platform-up`) and platform.env; stand-ins (network namespace
 * lk-e2e-isolation) and the helm upgrade only on the local cluster, as root.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { AGENT_PORT, type SandboxSession } from '@sandbox-platform/api';

import {
  kubeClients,
  predicate,
  REPO_ROOT,
  testboxPod,
  waitFor,
  waitForPod,
  podReady,
} from '../../src/framework/index.js';
import {
  createSession,
  deleteSession,
  formatMatrix,
  gatewayClient,
  matrixScript,
  namespaceOf,
  parseMatrix,
  STANDIN,
  StandIns,
  udpDnsProbe,
  uniqueName,
  type Cell,
  type CellResult,
} from './support.js';

const PLATFORM_NS = process.env.E2E_PLATFORM_NAMESPACE ?? 'sandbox-system';
const RELEASE = process.env.E2E_PLATFORM_RELEASE ?? 'sandbox';
const LOCAL = !process.env.E2E_KUBECONFIG;
const TARGET_NS = 'isolation-e2e-target';

const kube = kubeClients();
const discovery = kube.kc.makeApiClient(k8s.DiscoveryV1Api);

/**
 * One cell per running Pod and port it declares (the API or probe port `http` and the `metrics`
 * port of the gateway and operator pods), so a port added to the chart is in the matrix too.
 */
async function podPortCells(namespace: string, labelSelector: string, prefix: string): Promise<Cell[]> {
  const pods = await kube.core.listNamespacedPod({ namespace, labelSelector });
  const cells: Cell[] = [];
  pods.items.forEach((pod, i) => {
    const host = pod.status?.podIP;
    if (!host) return;
    for (const c of pod.spec?.containers ?? []) {
      for (const p of c.ports ?? []) {
        cells.push({ name: `${prefix}-${i}-${p.name ?? p.containerPort}`, host, port: p.containerPort });
      }
    }
  });
  if (!cells.some((c) => c.name.endsWith('-metrics'))) {
    throw new Error(`no ${prefix} pod declares a metrics port (${labelSelector} in ${namespace})`);
  }
  return cells;
}

/** The lateral targets of a session in the e2e tenant, read from the cluster. */
async function lateralCells(sameTenant: SandboxSession, otherTenant: SandboxSession): Promise<Cell[]> {
  const cells: Cell[] = [
    { name: 'agent-same-tenant', host: sameTenant.status!.podIP!, port: AGENT_PORT },
    { name: 'agent-other-tenant', host: otherTenant.status!.podIP!, port: AGENT_PORT },
  ];
  cells.push(...(await podPortCells(PLATFORM_NS, 'sandbox.dev/gateway=true', 'gateway-pod')));
  cells.push(...(await podPortCells(PLATFORM_NS, 'app.kubernetes.io/component=operator', 'operator-pod')));
  const svc = await kube.core.readNamespacedService({ name: 'kubernetes', namespace: 'default' });
  cells.push({ name: 'apiserver-service', host: svc.spec!.clusterIP!, port: 443 });
  const slices = await discovery.listNamespacedEndpointSlice({
    namespace: 'default',
    labelSelector: 'kubernetes.io/service-name=kubernetes',
  });
  const ep = slices.items[0]!;
  cells.push({ name: 'apiserver-host', host: ep.endpoints[0]!.addresses[0]!, port: ep.ports![0]!.port! });
  const nodes = await kube.core.listNode();
  const nodeIP = nodes.items[0]!.status!.addresses!.find((a) => a.type === 'InternalIP')!.address;
  cells.push({ name: 'kubelet', host: nodeIP, port: 10250 });
  if (LOCAL) {
    cells.push({ name: 'metadata-standin', host: STANDIN.metadata, port: 80 });
    cells.push({ name: 'external-dns-standin', host: STANDIN.dns, port: 53 });
  }
  return cells;
}

describe('isolation: a session reaches nothing but its DNS and what the values allow', () => {
  const gw = gatewayClient('e2e');
  const ns = namespaceOf('e2e');
  const otherNs = namespaceOf('other');
  const names = { attacker: uniqueName('iso-a'), victim: uniqueName('iso-b'), other: uniqueName('iso-c') };
  const standIns = new StandIns();
  let victim: SandboxSession;
  let other: SandboxSession;
  const exec = async (command: string): Promise<string> => {
    const r = await gw.exec(names.attacker, { command, timeoutSeconds: 60 });
    if (r.exitCode !== 0) throw new Error(`exec failed (${r.exitCode}): ${r.stderr}`);
    return r.stdout;
  };

  beforeAll(async () => {
    if (LOCAL && StandIns.supported()) await standIns.start();
    [, victim, other] = await Promise.all([
      createSession(kube, ns, names.attacker),
      createSession(kube, ns, names.victim),
      createSession(kube, otherNs, names.other),
    ]);
  }, 240_000);

  afterAll(async () => {
    standIns.stop();
    await deleteSession(kube, ns, names.attacker);
    await deleteSession(kube, ns, names.victim);
    await deleteSession(kube, otherNs, names.other);
  }, 60_000);

  it('the stand-ins answer from the host (so a closed cell is the policy, not a dead server)', () => {
    if (!LOCAL || !StandIns.supported()) return;
    for (const [host, port] of [
      [STANDIN.metadata, 80],
      [STANDIN.dns, 53],
    ] as const) {
      const out = execFileSync('bash', [
        '-c',
        `timeout 3 bash -c 'exec 3<>/dev/tcp/${host}/${port}; head -1 <&3'`,
      ]);
      expect(out.toString()).toBe('stand-in\n');
    }
  });

  it('every lateral connection from inside a session is refused or times out', async () => {
    const cells = await lateralCells(victim, other);
    const results: CellResult[] = parseMatrix(cells, await exec(matrixScript(cells)));
    console.log(formatMatrix(`lateral-movement matrix from session ${ns}/${names.attacker}:`, results));
    expect(results.filter((r) => r.outcome === 'open').map((r) => `${r.name} ${r.host}:${r.port}`)).toEqual(
      [],
    );
  }, 90_000);

  it('a UDP query to a DNS server outside the cluster gets no answer', async () => {
    if (!LOCAL || !StandIns.supported()) return;
    expect((await exec(udpDnsProbe(STANDIN.dns))).trim()).toBe('timeout');
  }, 60_000);

  it('the gateway still reaches the agents (exec through the gateway works)', async () => {
    const r = await gw.exec(names.victim, { command: 'echo reached' });
    expect(r).toMatchObject({ stdout: 'reached\n', exitCode: 0 });
  });

  it('resolves cluster names through the cluster DNS, and nothing else', async () => {
    const svc = await kube.core.readNamespacedService({ name: 'kubernetes', namespace: 'default' });
    const gwSvc = await kube.core.readNamespacedService({
      name: `${RELEASE}-sandbox-platform-gateway`,
      namespace: PLATFORM_NS,
    });
    const out = await exec(
      `python3 -c "import socket; print(socket.gethostbyname('kubernetes.default.svc.cluster.local')); ` +
        `print(socket.gethostbyname('${RELEASE}-sandbox-platform-gateway.${PLATFORM_NS}'))"`,
    );
    expect(out.trim().split('\n')).toEqual([svc.spec!.clusterIP, gwSvc.spec!.clusterIP]);
  }, 60_000);

  describe('an egress CIDR allowed by values', () => {
    let target: string;
    const helm = (...args: string[]): string =>
      execFileSync(join(process.env.LOCALKUBE_DIR ?? join(REPO_ROOT, '.localkube'), 'bin', 'helm'), args, {
        env: { ...process.env, KUBECONFIG: process.env.KUBECONFIG },
        stdio: ['ignore', 'pipe', 'pipe'],
      }).toString();
    const setAllowed = (cidrs: string[]): string =>
      helm(
        'upgrade',
        RELEASE,
        join(REPO_ROOT, 'charts', 'sandbox-platform'),
        '-n',
        PLATFORM_NS,
        '--reuse-values',
        '--set-json',
        `networkPolicy.egressAllowCIDRs=${JSON.stringify(cidrs)}`,
        '--wait',
        '--timeout',
        '3m',
      );
    const reach = async (): Promise<CellResult> =>
      parseMatrix(
        [{ name: 'allowed-target', host: target, port: 8080 }],
        await exec(matrixScript([{ name: 'allowed-target', host: target, port: 8080 }])),
      )[0]!;

    beforeAll(async () => {
      if (!LOCAL) return;
      await kube.core.createNamespace({ body: { metadata: { name: TARGET_NS } } }).catch(() => undefined);
      await kube.core.deleteNamespacedPod({ name: 'target', namespace: TARGET_NS }).catch(() => undefined);
      await waitFor(
        () => kube.core.listNamespacedPod({ namespace: TARGET_NS }),
        predicate('old target pod gone', (l: k8s.V1PodList) => l.items.length === 0),
        { timeoutMs: 60_000 },
      );
      await kube.core.createNamespacedPod({
        namespace: TARGET_NS,
        body: testboxPod('target', ['netecho', '8080'], (p) => {
          p.spec!.containers[0]!.readinessProbe = { tcpSocket: { port: 8080 }, periodSeconds: 1 };
        }),
      });
      const pod = await waitForPod(kube.core, { namespace: TARGET_NS, name: 'target' }, podReady, 120_000);
      target = pod.status!.podIP!;
    }, 180_000);

    afterAll(async () => {
      if (!LOCAL) return;
      setAllowed([]);
      await kube.core.deleteNamespace({ name: TARGET_NS }).catch(() => undefined);
    }, 240_000);

    it('is unreachable before, reachable once allowed (helm upgrade), and unreachable after removal', async () => {
      if (!LOCAL) return;
      expect((await reach()).outcome).toBe('closed');
      setAllowed([`${target}/32`]);
      const opened = await waitFor(
        reach,
        predicate('allowed target reachable', (r: CellResult) => r.outcome === 'open'),
        {
          timeoutMs: 60_000,
          intervalMs: 1000,
        },
      );
      expect(opened.outcome).toBe('open');
      setAllowed([]);
      const closed = await waitFor(
        reach,
        predicate('target closed again', (r: CellResult) => r.outcome === 'closed'),
        {
          timeoutMs: 60_000,
          intervalMs: 1000,
        },
      );
      expect(closed.outcome).toBe('closed');
    }, 300_000);
  });
});
