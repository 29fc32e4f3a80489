/**
 * One interception CA per sandbox namespace, kept in a Secret of the platform namespace
 * (`<prefix>-<namespace>`, keys ca.crt and ca.key: tenants cannot read it) and published as
 * ConfigMap `sandbox-egress-ca` (key ca.crt) in the sandbox namespace, which the operator mounts
 * into sandbox Pods (operator/src/resources/egress.ts). Made when the proxy starts, for every
 * sandbox namespace (main.ts), else at first use; two proxy replicas racing to create it both end
 * up with the one the API server kept (create conflict -> read).
 */
import * as k8s from '@kubernetes/client-node';
import { EGRESS_CA_CONFIGMAP } from '@sandbox-platform/api';

import type { CaSource } from '../intercept.js';
import { createCA, loadCA, type CertificateAuthority } from '../tls/ca.js';

/** Name of the ConfigMap holding a namespace's CA certificate. */
export const CA_CONFIGMAP = EGRESS_CA_CONFIGMAP;

const status = (err: unknown): number | undefined => (err as { code?: number }).code;

/** CAs from Secrets. */
export class KubeCaStore implements CaSource {
  private readonly cas = new Map<string, Promise<CertificateAuthority>>();
  private readonly core: k8s.CoreV1Api;

  constructor(
    kc: k8s.KubeConfig,
    private readonly opts: { platformNamespace: string; secretPrefix: string },
  ) {
    this.core = kc.makeApiClient(k8s.CoreV1Api);
  }

  forNamespace(namespace: string): Promise<CertificateAuthority> {
    let ca = this.cas.get(namespace);
    if (!ca) {
      ca = this.load(namespace);
      ca.catch(() => this.cas.delete(namespace));
      this.cas.set(namespace, ca);
    }
    return ca;
  }

  private async load(namespace: string): Promise<CertificateAuthority> {
    const name = `${this.opts.secretPrefix}-${namespace}`;
    const ns = this.opts.platformNamespace;
    let ca: CertificateAuthority;
    try {
      ca = fromSecret(await this.core.readNamespacedSecret({ namespace: ns, name }));
    } catch (err) {
      if (status(err) !== 404) throw new Error(`egress CA secret ${ns}/${name} unreadable`, { cause: err });
      const made = createCA(`sandbox egress CA ${namespace}`);
      const body: k8s.V1Secret = {
        metadata: { name, namespace: ns, labels: { 'app.kubernetes.io/component': 'egress-proxy' } },
        type: 'Opaque',
        data: { 'ca.crt': b64(made.certPem), 'ca.key': b64(made.keyPem) },
      };
      try {
        await this.core.createNamespacedSecret({ namespace: ns, body });
        ca = made;
      } catch (createErr) {
        if (status(createErr) !== 409)
          throw new Error(`egress CA secret ${ns}/${name}: create failed`, { cause: createErr });
        ca = fromSecret(await this.core.readNamespacedSecret({ namespace: ns, name }));
      }
    }
    await this.publish(namespace, ca.certPem);
    return ca;
  }

  /** Creates or updates the namespace's CA ConfigMap when it differs. */
  async publish(namespace: string, certPem: string): Promise<void> {
    const body: k8s.V1ConfigMap = {
      metadata: { name: CA_CONFIGMAP, namespace, labels: { 'app.kubernetes.io/component': 'egress-proxy' } },
      data: { 'ca.crt': certPem },
    };
    try {
      const cm = await this.core.readNamespacedConfigMap({ namespace, name: CA_CONFIGMAP });
      if (cm.data?.['ca.crt'] !== certPem)
        await this.core.replaceNamespacedConfigMap({
          namespace,
          name: CA_CONFIGMAP,
          body: { ...body, metadata: { ...body.metadata, resourceVersion: cm.metadata?.resourceVersion } },
        });
    } catch (err) {
      if (status(err) !== 404)
        throw new Error(`egress CA configmap ${namespace}/${CA_CONFIGMAP} unreadable`, { cause: err });
      await this.core.createNamespacedConfigMap({ namespace, body }).catch((e: unknown) => {
        if (status(e) !== 409)
          throw new Error(`egress CA configmap ${namespace}: create failed`, { cause: e });
      });
    }
  }
}

const b64 = (s: string): string => Buffer.from(s).toString('base64');

function fromSecret(s: k8s.V1Secret): CertificateAuthority {
  const crt = s.data?.['ca.crt'];
  const key = s.data?.['ca.key'];
  if (!crt || !key) throw new Error(`egress CA secret ${s.metadata?.name} lacks ca.crt or ca.key`);
  return loadCA(Buffer.from(crt, 'base64').toString(), Buffer.from(key, 'base64').toString());
}
