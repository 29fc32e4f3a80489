/**
 * What a sandbox Pod gets when the platform's egress proxy is on (docs/egress.md, ADR 0034): the
 * proxy as HTTP_PROXY/HTTPS_PROXY (both spellings: curl reads only the lower-case http_proxy, most
 * other tools either), and the namespace's interception CA, so HTTPS that a rule intercepts (header
 * injection, method and path rules) is trusted without the session doing anything. Pure, table-tested.
 *
 * The CA is the ConfigMap the proxy publishes in the namespace, mounted optional: the proxy makes
 * it when it first sees a session of the namespace, so the first Pod there may start before it
 * exists (the kubelet fills the volume in once it does). The agent keeps a bundle of the image's
 * public CAs plus the CA (EGRESS_TRUST_BUNDLE, sandbox-agent/src/egress/), which SSL_CERT_FILE,
 * CURL_CA_BUNDLE, REQUESTS_CA_BUNDLE, GIT_SSL_CAINFO, PIP_CERT and NODE_EXTRA_CA_CERTS name (a
 * file that always exists: Node warns on a missing one). A container without the agent
 * (KubernetesExec) has nobody to write that bundle: it gets the proxy and NODE_EXTRA_CA_CERTS
 * naming the mounted CA itself. The variables come before spec.env, which may override them (a
 * direct connection is refused by NetworkPolicy either way).
 */
import type { V1EnvVar, V1PodDNSConfig, V1Volume, V1VolumeMount } from '@kubernetes/client-node';
import {
  EGRESS_CA_CONFIGMAP,
  EGRESS_CA_DIR,
  EGRESS_CA_ENV,
  EGRESS_CA_FILE,
  EGRESS_CA_KEY,
  EGRESS_TRUST_BUNDLE,
} from '@sandbox-platform/api';

/** Name of the CA volume in the Pod. */
export const EGRESS_CA_VOLUME = 'egress-ca';

/** Hosts reached without the proxy: the sandbox's own loopback (its servers, the agent). */
export const NO_PROXY = 'localhost,127.0.0.1,::1';

/** Variables naming the trust bundle, for the tools that read each. */
const BUNDLE_VARIABLES = [
  'SSL_CERT_FILE',
  'CURL_CA_BUNDLE',
  'REQUESTS_CA_BUNDLE',
  'GIT_SSL_CAINFO',
  'PIP_CERT',
  'NODE_EXTRA_CA_CERTS',
];

/** The env a sandbox container gets for the proxy at `proxyUrl`; `agent`: the container runs the agent. */
export function egressEnv(proxyUrl: string, agent: boolean): V1EnvVar[] {
  const env: V1EnvVar[] = [];
  for (const name of ['HTTP_PROXY', 'HTTPS_PROXY']) {
    env.push({ name, value: proxyUrl }, { name: name.toLowerCase(), value: proxyUrl });
  }
  env.push({ name: 'NO_PROXY', value: NO_PROXY }, { name: 'no_proxy', value: NO_PROXY });
  if (!agent) return [...env, { name: 'NODE_EXTRA_CA_CERTS', value: EGRESS_CA_FILE }];
  env.push({ name: EGRESS_CA_ENV, value: EGRESS_CA_FILE });
  for (const name of BUNDLE_VARIABLES) env.push({ name, value: EGRESS_TRUST_BUNDLE });
  return env;
}

/** The namespace's CA ConfigMap, optional (it may not exist yet), world-readable in the Pod. */
export function egressCaVolume(): V1Volume {
  return {
    name: EGRESS_CA_VOLUME,
    configMap: {
      name: EGRESS_CA_CONFIGMAP,
      optional: true,
      defaultMode: 0o444,
      items: [{ key: EGRESS_CA_KEY, path: EGRESS_CA_KEY }],
    },
  };
}

export function egressCaMount(): V1VolumeMount {
  return { name: EGRESS_CA_VOLUME, mountPath: EGRESS_CA_DIR, readOnly: true };
}

/**
 * The DNS of a sandbox Pod that resolves through the egress proxy (docs/egress.md, "DNS"): no
 * cluster DNS, no search path (a sandbox reaches no cluster Service by name), the proxy's address
 * as the only name server. The proxy answers only names the session's rules allow.
 */
export function egressDns(server: string): { dnsPolicy: 'None'; dnsConfig: V1PodDNSConfig } {
  return {
    dnsPolicy: 'None',
    dnsConfig: { nameservers: [server], options: [{ name: 'ndots', value: '1' }] },
  };
}
