/**
 * e2e: isolation you can prove. From inside a session (exec through the gateway), every lateral
 * target is tried with a real TCP connection bounded by 3 s, and must fail as a NetworkPolicy makes
 * it fail (timed out, refused or reset): the agent of every kind of sandbox Pod (the platform's
 * default runtime in the same and in another tenant, one asking for gVisor, one asking for runc,
 * one suspended and resumed, a warm pool Pod), listeners on the port range the sandbox ingress
 * policy opens to the gateway (1024, 8000, 65535), every port the gateway and operator pods
 * declare, the API server (its host address and the `kubernetes` Service), the kubelet, and
 * stand-ins for a cloud metadata service and a DNS server outside the cluster (TCP, and UDP).
 *
 * Every cell has a positive control run in the same test: the same probe from a place the policy
 * admits (the gateway's position for sandbox Pods, the node otherwise) must connect, so a dead
 * target, a missing tool or a missing route makes the cell inconclusive, which fails like an open
 * cell (matrix.ts). The gateway still reaches the agents, names resolve only through the egress proxy's DNS, and
 * an egress CIDR allowed by the chart's values is reachable until the value is removed again.
 *
 * With the enforcer switched off (`make test-isolation-unenforced`: localkube
 * --network-policy=false) the same matrix FAILS with every cell open (unenforced-check.ts checks).
 *
 * Needs the chart installed (`make platform-up`) and platform.env. The stand-ins (network namespace
 * lk-e2e-isolation) and the helm upgrade need the local cluster and root: elsewhere they are NOT
 * RUN (e2e summary); on the local cluster a stand-in that cannot start fails the tests using it.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type * as k8s from '@kubernetes/client-node';
import type { SandboxSession } from '@sandbox-platform/api';

import {
  apiStatus,
  isNotFound,
  kubeClients,
  predicate,
  REPO_ROOT,
  testboxPod,
  waitFor,
  waitForPod,
  podReady,
} from '../../src/framework/index.js';
import {
  describeOnLocal,
  itOnLocal,
  notRun,
  NOT_LOCAL_REASON,
  onLocalCluster,
} from '../../src/framework/not-run.js';
import { deletePool } from '../support/custom-objects.js';
import {
  controlPlaneTargets,
  podPortTargets,
  resumedSession,
  sandboxTargets,
  startListeners,
  warmPoolPod,
  type SandboxTarget,
} from './lateral.js';
import {
  failures,
  formatMatrix,
  parseProbes,
  runMatrix,
  verdict,
  type CellResult,
  type Target,
} from './matrix.js';
import { ControlPlaces, sessionPlace } from './places.js';
import { missingCells, REPORTS, requiredCells, writeReport } from './report.js';
import { STANDIN, StandIns, udpDnsProbe } from './standins.js';
import {
  createSession,
  deleteSession,
  gatewayClient,
  GVISOR,
  gvisorUnavailable,
  namespaceOf,
  runcRuntimeClass,
  uniqueName,
} from './support.js';

const PLATFORM_NS = process.env.E2E_PLATFORM_NAMESPACE ?? 'sandbox-system';
const RELEASE = process.env.E2E_PLATFORM_RELEASE ?? 'sandbox';
const TARGET_NS = 'isolation-e2e-target';

const kube = kubeClients();
/** Rethrows every error but the one `ok` accepts (e.g. 404 on a delete: already gone). */
const unless =
  (ok: (err: unknown) => boolean) =>
  (err: unknown): void => {
    if (!ok(err)) throw err;
  };
const GVISOR_MISSING = await gvisorUnavailable(kube.kc);
/** `runc` where the cluster has that RuntimeClass (the opt-out when gVisor is the default). */
const RUNC_CLASS = await runcRuntimeClass(kube.kc);

describe('isolation: a session reaches nothing but its DNS and what the values allow', () => {
  const gw = gatewayClient('e2e');
  const gwOther = gatewayClient('other');
  const ns = namespaceOf('e2e');
  const otherNs = namespaceOf('other');
  const names = {
    attacker: uniqueName('iso-a'),
    victim: uniqueName('iso-b'),
    other: uniqueName('iso-c'),
    gvisor: uniqueName('iso-gv'),
    resumed: uniqueName('iso-r'),
    runc: uniqueName('iso-rc'),
    pool: uniqueName('iso-pool'),
  };
  const attacker = sessionPlace(gw, ns, names.attacker);
  const controls = new ControlPlaces(kube, PLATFORM_NS);
  const standIns = new StandIns();
  let standInsError: Error | undefined;
  let sandboxes: SandboxTarget[] = [];

  /** A session of `client`'s tenant, Ready, with the range listener: a target of kind `kind`. */
  const listening = async (
    client: typeof gw,
    session: Promise<SandboxSession>,
    kind: string,
  ): Promise<SandboxTarget> => {
    const s = await session;
    await startListeners(client, s.metadata.name!);
    return { kind, podIP: s.status!.podIP!, listening: true };
  };

  beforeAll(async () => {
    if (onLocalCluster) await standIns.start().catch((err: Error) => void (standInsError = err));
    if (GVISOR_MISSING) notRun('lateral cells to a gVisor session', GVISOR_MISSING);
    if (!RUNC_CLASS)
      notRun('lateral cells to a session asking for runc', 'the cluster has no RuntimeClass runc');
    const jobs: Array<Promise<SandboxTarget>> = [
      listening(gw, createSession(kube, ns, names.victim), 'same-tenant'),
      listening(gwOther, createSession(kube, otherNs, names.other), 'other-tenant'),
      listening(gw, resumedSession(kube, gw, ns, names.resumed), 'resumed-same-tenant'),
      warmPoolPod(kube, ns, names.pool).then((p) => ({
        kind: 'warm-pool-pod',
        podIP: p.status!.podIP!,
        listening: false,
      })),
    ];
    if (!GVISOR_MISSING) {
      const gv = createSession(kube, otherNs, names.gvisor, { runtimeClassName: GVISOR });
      jobs.push(listening(gwOther, gv, 'gvisor-other-tenant'));
    }
    if (RUNC_CLASS) {
      const rc = createSession(kube, ns, names.runc, { runtimeClassName: RUNC_CLASS });
      jobs.push(listening(gw, rc, 'runc-same-tenant'));
    }
    [sandboxes] = await Promise.all([
      Promise.all(jobs),
      createSession(kube, ns, names.attacker),
      controls.gateway(),
    ]);
  }, 300_000);

  afterAll(async () => {
    standIns.stop();
    await Promise.all([
      controls.stop(),
      deleteSession(kube, ns, names.attacker),
      deleteSession(kube, ns, names.victim),
      deleteSession(kube, ns, names.resumed),
      deleteSession(kube, ns, names.runc),
      deleteSession(kube, otherNs, names.other),
      deleteSession(kube, otherNs, names.gvisor),
      deletePool(kube, ns, names.pool).catch(unless(isNotFound)),
    ]);
  }, 120_000);

  /** The stand-ins' cells (local cluster), controlled from the node this process runs on. */
  async function standInTargets(): Promise<Target[]> {
    if (!onLocalCluster) {
      notRun('the stand-in cells (cloud metadata, outside DNS) of the lateral matrix', NOT_LOCAL_REASON);
      return [];
    }
    if (standInsError) throw standInsError;
    const control = await controls.node((await kube.core.listNode()).items[0]!.metadata!.name!);
    return [
      { name: 'metadata-standin', host: STANDIN.metadata, port: 80, control },
      { name: 'external-dns-standin', host: STANDIN.dns, port: 53, control },
    ];
  }

  it('every lateral connection from inside a session fails as the policy makes it fail, and its control connects', async () => {
    const targets = (
      await Promise.all([
        sandboxTargets(sandboxes, controls),
        podPortTargets(kube, controls, {
          namespace: PLATFORM_NS,
          labelSelector: 'app.kubernetes.io/component=gateway',
          prefix: 'gateway-pod',
        }),
        podPortTargets(kube, controls, {
          namespace: PLATFORM_NS,
          labelSelector: 'app.kubernetes.io/component=operator',
          prefix: 'operator-pod',
        }),
        controlPlaneTargets(kube, controls),
        standInTargets(),
      ])
    ).flat();
    const results: CellResult[] = await runMatrix(attacker, targets);
    writeReport(REPORTS.matrix, results);
    console.log(
      formatMatrix(`lateral-movement matrix from ${attacker.name} (${results.length} cells):`, results),
    );
    const required = requiredCells({ local: onLocalCluster, gvisor: !GVISOR_MISSING, runc: !!RUNC_CLASS });
    expect({
      missing: missingCells(
        results.map((r) => r.name),
        required,
      ),
      ...failures(results),
    }).toEqual({
      missing: [],
      open: [],
      inconclusive: [],
    });
  }, 120_000);

  itOnLocal(
    'a UDP query to a DNS server outside the cluster gets no answer (control: the node gets one)',
    async () => {
      if (standInsError) throw standInsError;
      const node = await controls.node((await kube.core.listNode()).items[0]!.metadata!.name!);
      const name = 'udp-external-dns-standin';
      const [attack, control] = await Promise.all(
        [attacker, node].map(async (place) =>
          parseProbes([name], await place.run(udpDnsProbe(name, STANDIN.dns))).get(name)!,
        ),
      );
      const cell: CellResult = {
        name,
        host: STANDIN.dns,
        port: 53,
        attack: attack!,
        controlPlace: node.name,
        control: control!,
        ...verdict(attack!, control!, node.name),
      };
      writeReport(REPORTS.udp, [cell]);
      console.log(formatMatrix('UDP DNS query to the outside-DNS stand-in:', [cell]));
      expect(failures([cell])).toEqual({ open: [], inconclusive: [] });
    },
    60_000,
  );

  it('the gateway still reaches the agents (exec through the gateway works)', async () => {
    const r = await gw.exec(names.victim, { command: 'echo reached' });
    expect(r).toMatchObject({ stdout: 'reached\n', exitCode: 0 });
  });

  it("resolves no cluster name: the egress proxy's DNS answers only its own name and what rules allow", async () => {
    const proxy = await kube.core.readNamespacedService({
      name: `${RELEASE}-sandbox-platform-egress-proxy`,
      namespace: PLATFORM_NS,
    });
    const out = await attacker.run(
      `python3 -c "import socket\nfor n in ['kubernetes.default.svc.cluster.local', '${RELEASE}-sandbox-platform-gateway.${PLATFORM_NS}.svc.cluster.local', '${RELEASE}-sandbox-platform-egress-proxy.${PLATFORM_NS}.svc']:\n  try: print(socket.gethostbyname(n))\n  except socket.gaierror as e: print('error', e.args[0])"`,
    );
    // NXDOMAIN (EAI_NONAME, -2) for the cluster's names; the proxy (HTTP_PROXY names it) resolves.
    expect(out.trim().split('\n')).toEqual(['error -2', 'error -2', proxy.spec!.clusterIP]);
  }, 60_000);

  describeOnLocal('an egress CIDR allowed by values', () => {
    let target: Target;
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
    const reach = async (): Promise<CellResult> => (await runMatrix(attacker, [target]))[0]!;

    beforeAll(async () => {
      await kube.core
        .createNamespace({ body: { metadata: { name: TARGET_NS } } })
        .catch(unless((err) => apiStatus(err) === 409));
      await kube.core.deleteNamespacedPod({ name: 'target', namespace: TARGET_NS }).catch(unless(isNotFound));
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
      const control = await controls.node(pod.spec!.nodeName!);
      target = { name: 'allowed-target', host: pod.status!.podIP!, port: 8080, control };
    }, 180_000);

    afterAll(async () => {
      setAllowed([]);
      await kube.core.deleteNamespace({ name: TARGET_NS }).catch(unless(isNotFound));
    }, 240_000);

    it('is unreachable before, reachable once allowed (helm upgrade), and unreachable after removal', async () => {
      const before = await reach();
      writeReport(REPORTS.egress, [before]);
      console.log(formatMatrix('egress CIDR target before it is allowed:', [before]));
      expect(before.verdict).toBe('closed');
      setAllowed([`${target.host}/32`]);
      const opened = await waitFor(
        reach,
        predicate('allowed target reachable', (r: CellResult) => r.verdict === 'OPEN'),
        { timeoutMs: 60_000, intervalMs: 1000 },
      );
      expect(opened.verdict).toBe('OPEN');
      setAllowed([]);
      const closed = await waitFor(
        reach,
        predicate('target closed again', (r: CellResult) => r.verdict === 'closed'),
        { timeoutMs: 60_000, intervalMs: 1000 },
      );
      expect(closed.verdict).toBe('closed');
    }, 300_000);
  });
});
