/**
 * The Helm chart's operator objects, rendered by the pinned helm (`make tools`) exactly as an
 * install would create them, so the integration tests run the operator under the chart's own RBAC
 * and with its pre-created Lease: a rule the chart lacks fails a test here, not a deployment.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

import * as k8s from '@kubernetes/client-node';

import { REPO_ROOT } from '@sandbox-platform/test-support';

const CHART = join(REPO_ROOT, 'charts/sandbox-platform');

/** The release's operator objects and names. */
export interface RenderedOperator {
  /** The ServiceAccount, Roles and RoleBindings (templates/operator-rbac.yaml). */
  readonly rbac: k8s.KubernetesObject[];
  /** The leader Lease (templates/operator-lease.yaml). */
  readonly lease: k8s.KubernetesObject;
  /** Name of the operator's ServiceAccount, Lease and Deployment. */
  readonly name: string;
}

/** The helm binary: $HELM, else the one `make tools` builds (built on first use). */
export function helmBinary(): string {
  if (process.env.HELM) return process.env.HELM;
  const helm = join(process.env.LOCALKUBE_DIR ?? join(REPO_ROOT, '.localkube'), 'bin', 'helm');
  if (!existsSync(helm)) {
    const built = spawnSync('make', ['tools'], { cwd: REPO_ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
    if (built.status !== 0) throw new Error(`make tools failed (status ${String(built.status)})`);
  }
  return helm;
}

/**
 * Renders the chart as release `release` in `namespace` with these sandbox namespaces and returns
 * the operator's RBAC objects and Lease. `kubeVersion` is the API server's (the chart requires one).
 */
export function renderOperator(opts: {
  readonly release: string;
  readonly namespace: string;
  readonly sandboxNamespaces: readonly string[];
  readonly kubeVersion: string;
}): RenderedOperator {
  const args = [
    'template',
    opts.release,
    CHART,
    '--namespace',
    opts.namespace,
    '--kube-version',
    opts.kubeVersion,
    '--set',
    `sandboxNamespaces={${opts.sandboxNamespaces.join(',')}}`,
    '--set',
    'createSandboxNamespaces=false',
    // The chart requires an API key for the gateway; a throwaway hash, never used.
    '--set',
    'apiKeys.keys[0].id=it',
    '--set',
    `apiKeys.keys[0].sha256=${'0'.repeat(64)}`,
    '--set',
    `apiKeys.keys[0].namespaces[0]=${opts.sandboxNamespaces[0] ?? ''}`,
    '--show-only',
    'templates/operator-rbac.yaml',
    '--show-only',
    'templates/operator-lease.yaml',
  ];
  const res = spawnSync(helmBinary(), args, { encoding: 'utf8' });
  if (res.status !== 0) throw new Error(`helm template failed:\n${res.stderr}`);
  const docs = (k8s.loadAllYaml(res.stdout) as Array<k8s.KubernetesObject | null>).filter(
    (d): d is k8s.KubernetesObject => d !== null,
  );
  const lease = docs.find((d) => d.kind === 'Lease');
  const sa = docs.find((d) => d.kind === 'ServiceAccount');
  if (!lease || !sa?.metadata?.name)
    throw new Error('the chart rendered no operator Lease or ServiceAccount');
  return { rbac: docs.filter((d) => d !== lease), lease, name: sa.metadata.name };
}
