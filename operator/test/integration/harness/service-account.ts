/**
 * A kubeconfig that authenticates as a ServiceAccount, with a token from the TokenRequest API
 * (what the kubelet mounts into a Pod), so that an operator run as a child process has exactly
 * the permissions its RBAC grants.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll } from '@jest/globals';
import type * as k8s from '@kubernetes/client-node';

/** Writes the kubeconfig to a temp file and returns its path. */
export async function serviceAccountKubeconfig(
  kc: k8s.KubeConfig,
  core: k8s.CoreV1Api,
  namespace: string,
  serviceAccount: string,
): Promise<string> {
  const request = await core.createNamespacedServiceAccountToken({
    namespace,
    name: serviceAccount,
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  const token = request.status?.token;
  if (!token) throw new Error(`no token issued for ServiceAccount ${namespace}/${serviceAccount}`);
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('the admin kubeconfig has no current cluster');
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'it',
        cluster: {
          server: cluster.server,
          ...(cluster.caData ? { 'certificate-authority-data': cluster.caData } : {}),
          ...(cluster.caFile ? { 'certificate-authority': cluster.caFile } : {}),
        },
      },
    ],
    users: [{ name: serviceAccount, user: { token } }],
    contexts: [{ name: 'it', context: { cluster: 'it', user: serviceAccount, namespace } }],
    'current-context': 'it',
  };
  return writeKubeconfig(config, 'operator-sa-');
}

/** Directories of the kubeconfigs written in this test file, removed after its tests. */
const kubeconfigDirs: string[] = [];
afterAll(() => kubeconfigDirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** Writes a kubeconfig object to a file of its own (mode 0600) and returns its path. */
export function writeKubeconfig(config: object, prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  kubeconfigDirs.push(dir);
  const file = join(dir, 'kubeconfig');
  // JSON is YAML: both client-node versions read it.
  writeFileSync(file, JSON.stringify(config), { mode: 0o600 });
  return file;
}
