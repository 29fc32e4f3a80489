/**
 * The bench's own Helm release of the chart: operator and gateway (two replicas each, the chart's
 * defaults otherwise) serving one sandbox namespace, installed next to the platform release the
 * e2e specs use and uninstalled afterwards. Its own release, so that neither its policy nor a
 * failover it provokes touches the shared platform, and another helper's `make platform-up`
 * cannot change it mid-run. Its sandbox policy lets that one namespace pin sessions to the
 * simulated nodes (values.yaml next to this file: policy.namespaces.<ns>); its quota is off (10,000
 * sessions are the point), and its API key is made per run.
 */
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { join } from 'node:path';

import * as k8s from '@kubernetes/client-node';

import { findPodProcesses, type PodProcess, REPO_ROOT } from '@sandbox-platform/test-support';

/** Where and under which names the bench release lives. */
export const BENCH = {
  release: 'scale',
  namespace: 'sandbox-scale-system',
  sandboxNamespace: 'sandbox-scale',
  floorNamespace: 'sandbox-scale-floor',
  /** The chart's operator Lease: the operator's full name. */
  lease: 'scale-sandbox-platform-operator',
  gatewayService: 'scale-sandbox-platform-gateway',
} as const;

/** Paths of the tools the Makefile passes (HELM, CHART). */
export interface Tools {
  readonly helm: string;
  readonly chart: string;
  readonly kubeconfig: string;
}

/**
 * Installs (or upgrades) the bench release; returns its API key. `set` and `setString`: extra
 * --set and --set-string values (the Makefile's image digests roll the pods to a rebuilt image).
 */
export function installRelease(tools: Tools, set: readonly string[], setString: readonly string[]): string {
  // A release an earlier run left without a deployed revision (an install that failed or was
  // stopped) makes `upgrade --install` fail with "has no deployed releases": remove it first.
  const left = releaseStatus(tools);
  if (left !== undefined && left !== 'deployed') {
    console.log(
      `bench-scale: release ${BENCH.release} was left ${left} by an earlier run; uninstalling it first`,
    );
    uninstallRelease(tools);
  }
  const key = randomBytes(32).toString('hex');
  const sha = createHash('sha256').update(key).digest('hex');
  helm(tools, [
    'upgrade',
    '--install',
    BENCH.release,
    tools.chart,
    '-n',
    BENCH.namespace,
    '--create-namespace',
    // No --skip-crds: Helm installs the chart's CRDs only where they are missing (a cluster reset
    // since `make run`) and never changes existing ones (the platform release's).
    '-f',
    join(REPO_ROOT, 'test-e2e/bench/scale/values.yaml'),
    '--set',
    `apiKeys.keys[0].id=scale,apiKeys.keys[0].sha256=${sha},apiKeys.keys[0].namespaces[0]=${BENCH.sandboxNamespace}`,
    ...set.flatMap((s) => ['--set', s]),
    ...setString.flatMap((s) => ['--set-string', s]),
    '--wait',
    '--timeout',
    '5m',
  ]);
  return key;
}

/** Uninstalls the bench release (its sandbox namespace goes with it). */
export function uninstallRelease(tools: Tools): void {
  helm(tools, [
    'uninstall',
    BENCH.release,
    '-n',
    BENCH.namespace,
    '--wait',
    '--timeout',
    '5m',
    '--ignore-not-found',
  ]);
}

/** The bench release's status (deployed, failed, pending-install, ...), or undefined when there is none. */
function releaseStatus(tools: Tools): string | undefined {
  const out = execFileSync(
    tools.helm,
    [
      '--kubeconfig',
      tools.kubeconfig,
      'list',
      '-a',
      '-n',
      BENCH.namespace,
      '-f',
      `^${BENCH.release}$`,
      '-o',
      'json',
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  ).toString();
  const releases = JSON.parse(out) as Array<{ name: string; status: string }>;
  return releases.find((r) => r.name === BENCH.release)?.status;
}

function helm(tools: Tools, args: string[]): void {
  execFileSync(tools.helm, ['--kubeconfig', tools.kubeconfig, ...args], {
    stdio: ['ignore', 'inherit', 'inherit'],
  });
}

/** The release's running pods of one component (operator or gateway). */
export async function componentPods(
  core: k8s.CoreV1Api,
  component: 'operator' | 'gateway',
): Promise<k8s.V1Pod[]> {
  const list = await core.listNamespacedPod({
    namespace: BENCH.namespace,
    labelSelector: `app.kubernetes.io/component=${component},app.kubernetes.io/instance=${BENCH.release}`,
  });
  return list.items.filter((p) => !p.metadata?.deletionTimestamp && p.status?.phase === 'Running');
}

/** The operator Lease's holder (a pod name), or undefined. */
export async function leaseHolder(kc: k8s.KubeConfig): Promise<string | undefined> {
  const lease = await kc
    .makeApiClient(k8s.CoordinationV1Api)
    .readNamespacedLease({ namespace: BENCH.namespace, name: BENCH.lease });
  return lease.spec?.holderIdentity || undefined;
}

/** The node process of each of the pods, on this machine. */
export function nodeProcesses(pods: readonly k8s.V1Pod[]): PodProcess[] {
  return findPodProcesses(pods, { command: 'node' });
}

/** The leader's node process. */
export async function leaderProcess(kc: k8s.KubeConfig, core: k8s.CoreV1Api): Promise<PodProcess> {
  return (await leader(kc, core)).proc;
}

/** The leader's pod and its node process. */
export async function leader(
  kc: k8s.KubeConfig,
  core: k8s.CoreV1Api,
): Promise<{ pod: k8s.V1Pod; proc: PodProcess }> {
  const [pods, holder] = await Promise.all([componentPods(core, 'operator'), leaseHolder(kc)]);
  const pod = pods.find((p) => p.metadata?.name === holder);
  if (!pod) throw new Error(`no running operator pod holds the Lease (holder ${holder ?? 'none'})`);
  return { pod, proc: nodeProcesses([pod])[0]! };
}

/** A served-namespaces binding of another release of the chart, and what the bench changed. */
export interface Exemption {
  readonly binding: string;
}

/**
 * Each other release of the chart refuses sessions outside its own namespaces
 * (admission.refuseUnservedNamespaces: a ValidatingAdmissionPolicyBinding `<release>-served-
 * namespaces` selecting every namespace NotIn its list). For the run the bench's namespace is
 * added to those lists, and only that: every other unserved namespace stays refused, and a `helm
 * upgrade` of that release puts its own list back. restoreExemptions() removes it again.
 */
export async function exemptFromOtherReleases(kc: k8s.KubeConfig): Promise<Exemption[]> {
  const api = kc.makeApiClient(k8s.AdmissionregistrationV1Api);
  const bindings = await api.listValidatingAdmissionPolicyBinding({
    labelSelector: 'app.kubernetes.io/part-of=sandbox-platform',
  });
  const done: Exemption[] = [];
  for (const b of bindings.items) {
    const name = b.metadata!.name!;
    if (!name.endsWith('-served-namespaces') || name.startsWith(`${BENCH.release}-`)) continue;
    const exprs = b.spec?.matchResources?.namespaceSelector?.matchExpressions ?? [];
    const i = exprs.findIndex((e) => e.key === 'kubernetes.io/metadata.name' && e.operator === 'NotIn');
    if (i < 0 || exprs[i]!.values?.includes(BENCH.sandboxNamespace)) continue;
    await api.patchValidatingAdmissionPolicyBinding(
      {
        name,
        body: [
          {
            op: 'add',
            path: `/spec/matchResources/namespaceSelector/matchExpressions/${i}/values/-`,
            value: BENCH.sandboxNamespace,
          },
        ],
      },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.JsonPatch),
    );
    done.push({ binding: name });
  }
  return done;
}

/** Takes the bench's namespace out of the bindings exemptFromOtherReleases() changed. */
export async function restoreExemptions(kc: k8s.KubeConfig, exemptions: readonly Exemption[]): Promise<void> {
  const api = kc.makeApiClient(k8s.AdmissionregistrationV1Api);
  for (const { binding } of exemptions) {
    const b = await api.readValidatingAdmissionPolicyBinding({ name: binding });
    const exprs = b.spec?.matchResources?.namespaceSelector?.matchExpressions ?? [];
    const i = exprs.findIndex((e) => e.key === 'kubernetes.io/metadata.name' && e.operator === 'NotIn');
    const j = i < 0 ? -1 : (exprs[i]!.values ?? []).indexOf(BENCH.sandboxNamespace);
    if (j < 0) continue; // a helm upgrade already put the release's own list back
    await api.patchValidatingAdmissionPolicyBinding(
      {
        name: binding,
        body: [
          {
            op: 'test',
            path: `/spec/matchResources/namespaceSelector/matchExpressions/${i}/values/${j}`,
            value: BENCH.sandboxNamespace,
          },
          { op: 'remove', path: `/spec/matchResources/namespaceSelector/matchExpressions/${i}/values/${j}` },
        ],
      },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.JsonPatch),
    );
  }
}
