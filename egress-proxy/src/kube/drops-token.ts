/**
 * The drop reporters' bearer token, published by the proxy: a Secret of the platform namespace
 * (key `token`) holding HMAC(masterKey, AUDIT_DROPS_LABEL), which the reporter DaemonSet mounts.
 * So the master key, from which every session token derives, stays in the platform's Deployments
 * and never reaches a host-network Pod on every node; the token only lets its holder add
 * "direct connection" records (POST /v1/drops), nothing else. Written at start when missing or
 * different (a rotated master key); the reporters' Pods start once it exists.
 */
import * as k8s from '@kubernetes/client-node';

const status = (err: unknown): number | undefined => (err as { code?: number }).code;

/** Creates or updates Secret `name` in `namespace` so that its `token` is `token`. */
export async function publishDropsToken(
  kc: k8s.KubeConfig,
  namespace: string,
  name: string,
  token: string,
): Promise<'created' | 'updated' | 'unchanged'> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const data = { token: Buffer.from(token).toString('base64') };
  try {
    const existing = await core.readNamespacedSecret({ namespace, name });
    if (existing.data?.token === data.token) return 'unchanged';
    await core.replaceNamespacedSecret({ namespace, name, body: { ...existing, data } });
    return 'updated';
  } catch (err) {
    if (status(err) !== 404)
      throw new Error(`drops token secret ${namespace}/${name}: ${String(err)}`, { cause: err });
  }
  await core.createNamespacedSecret({
    namespace,
    body: {
      metadata: {
        name,
        // As the interception CAs: outside the chart's manifest, so `helm uninstall` keeps it; the
        // documented clean-up (docs/egress.md) deletes by this label.
        labels: {
          'app.kubernetes.io/component': 'egress-proxy',
          'app.kubernetes.io/managed-by': 'sandbox-egress-proxy',
        },
      },
      type: 'Opaque',
      data,
    },
  });
  return 'created';
}
