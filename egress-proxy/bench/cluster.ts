/**
 * bench-egress --mode cluster: from a sandbox of the local platform (make platform-up) to the
 * egress e2e's in-cluster upstream (test-support/src/egress-upstream.ts): the load generator
 * (load.mjs) runs inside the sandbox, through the egress proxy, and directly with enforcement off
 * (the namespace's sandbox-egress NetworkPolicy removed for that run and put back right after),
 * alternating per round. The chart is switched to reach in-cluster upstreams for the run and back
 * after (as the e2e spec does). Needs platform.env (E2E_GATEWAY_URL, keys) and KUBECONFIG.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import * as k8s from '@kubernetes/client-node';

import {
  ANNOTATIONS,
  API_VERSION,
  CONDITIONS,
  GROUP,
  KIND,
  PLURAL,
  VERSION,
  type SandboxSession,
} from '@sandbox-platform/api';
import { SandboxClient } from '@sandbox-platform/client';

import {
  kubeClients,
  type KubeClients,
  REPO_ROOT,
  startUpstream,
  stopUpstream,
  UPSTREAM_HTTP_PORT as HTTP_PORT,
  UPSTREAM_NS,
  upstreamCertificates,
  upstreamHost as host,
} from '@sandbox-platform/test-support';

import type { Stats } from './egress-bench.js';

type Report = (rows: Array<{ path: string; round: number } & Stats>) => void;

const PLATFORM_NS = process.env.E2E_PLATFORM_NAMESPACE ?? 'sandbox-system';
const RELEASE = process.env.E2E_PLATFORM_RELEASE ?? 'sandbox';

function helmValues(blockClusterRanges: boolean, egressTo: unknown[]): void {
  const bin = join(process.env.LOCALKUBE_DIR ?? join(REPO_ROOT, '.localkube'), 'bin', 'helm');
  execFileSync(
    bin,
    [
      'upgrade',
      RELEASE,
      join(REPO_ROOT, 'charts', 'sandbox-platform'),
      '-n',
      PLATFORM_NS,
      '--reset-then-reuse-values',
      '--set',
      `egressProxy.blockClusterRanges=${blockClusterRanges}`,
      '--set-json',
      `egressProxy.egressTo=${JSON.stringify(egressTo)}`,
      '--wait',
      '--timeout',
      '4m',
    ],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
}

const custom = { group: GROUP, version: VERSION, plural: PLURAL };

/** A session with these egress rules, Ready (created through the API, as the e2e does). */
async function createSession(
  kube: KubeClients,
  namespace: string,
  name: string,
  egress: SandboxSession['spec']['egress'],
): Promise<void> {
  const body: SandboxSession = {
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: { name, namespace, annotations: { [ANNOTATIONS.createdByKey]: 'bench' } },
    spec: { image: 'localhost/sandbox-platform/sandbox-agent:dev', idleTimeoutSeconds: 1800, egress },
  };
  await kube.custom.createNamespacedCustomObject({ ...custom, namespace, body });
  for (let i = 0; i < 180; i++) {
    const s = (await kube.custom.getNamespacedCustomObject({ ...custom, namespace, name })) as SandboxSession;
    if (s.status?.conditions?.some((c) => c.type === CONDITIONS.ready && c.status === 'True')) return;
    await new Promise((r) => setTimeout(r, 1000));
  }
  throw new Error(`session ${namespace}/${name} not Ready in 180 s`);
}

/** Runs the cluster benchmark. */
export async function cluster(arg: (name: string, def: string) => string, report: Report): Promise<void> {
  const n = arg('n', '1000');
  const conc = arg('conc', '16');
  const seconds = arg('seconds', '5');
  const rounds = Number(arg('rounds', '2'));
  const kube = kubeClients();
  const net = kube.kc.makeApiClient(k8s.NetworkingV1Api);
  const ns = process.env.E2E_NAMESPACE ?? 'sandbox-e2e';
  const gw = new SandboxClient({
    baseUrl: process.env.E2E_GATEWAY_URL!,
    apiKey: process.env.E2E_GATEWAY_API_KEY!,
    namespace: ns,
  });
  const name = `bench-egress-${Date.now().toString(36)}`;
  const proxy = `${RELEASE}-sandbox-platform-egress-proxy.${PLATFORM_NS}.svc.cluster.local:3128`;
  const url = `http://${host('allowed-upstream')}:${HTTP_PORT}/`;
  await startUpstream(kube, upstreamCertificates());
  helmValues(false, [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': UPSTREAM_NS } } }]);
  const rows: Array<{ path: string; round: number } & Stats> = [];
  try {
    await createSession(kube, ns, name, {
      inheritNamespaceDefaults: false,
      rules: [{ host: host('allowed-upstream'), ports: [HTTP_PORT] }],
    });
    await gw.writeFile(name, 'load.mjs', readFileSync(join(REPO_ROOT, 'egress-proxy', 'bench', 'load.mjs')));
    const run = async (via: string): Promise<Stats> => {
      const r = await gw.exec(name, {
        command: `node load.mjs ${url} ${via} ${n} ${conc} ${seconds}`,
        timeoutSeconds: 300,
      });
      if (r.exitCode !== 0) throw new Error(`load in the sandbox failed (${r.exitCode}): ${r.stderr}`);
      return JSON.parse(r.stdout.trim()) as Stats;
    };
    for (let round = 1; round <= rounds; round++) {
      rows.push({ path: 'egress-proxy', round, ...(await run(proxy)) });
      const policy = await net.readNamespacedNetworkPolicy({ name: 'sandbox-egress', namespace: ns });
      await net.deleteNamespacedNetworkPolicy({ name: 'sandbox-egress', namespace: ns });
      try {
        await new Promise((r) => setTimeout(r, 3000));
        rows.push({ path: 'direct', round, ...(await run('-')) });
      } finally {
        const {
          resourceVersion: _rv,
          uid: _uid,
          creationTimestamp: _ct,
          managedFields: _mf,
          ...metadata
        } = policy.metadata!;
        await net.createNamespacedNetworkPolicy({ namespace: ns, body: { ...policy, metadata } });
      }
    }
  } finally {
    await kube.custom.deleteNamespacedCustomObject({ ...custom, namespace: ns, name }).catch(() => undefined);
    helmValues(true, []);
    await stopUpstream(kube);
  }
  report(rows);
}
