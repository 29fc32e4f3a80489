/**
 * The egress e2e's stand-in for the internet: one Pod in its own namespace serving HTTP (8080) and
 * HTTPS (8443, a certificate of a test CA made here with openssl) behind two Services, so two DNS
 * names of the cluster: `allowed-upstream.<ns>.svc.cluster.local` and `denied-upstream...`.
 * It answers every request with its method, host and path, and logs one JSON line per request
 * with the headers it saw (the spec reads the log to see an injected credential arrive; the
 * answer never carries header values back to the sandbox).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type * as k8s from '@kubernetes/client-node';

import { apiStatus, isNotFound, type KubeClients } from './kube.js';
import { podReady, waitForPod } from './pods.js';

/** The agent image: node, for the upstream's server. */
const AGENT_IMAGE = 'localhost/sandbox-platform/sandbox-agent:dev';

export const UPSTREAM_NS = 'egress-e2e-upstream';
export const HTTP_PORT = 8080;
export const HTTPS_PORT = 8443;
export const host = (service: 'allowed-upstream' | 'denied-upstream'): string =>
  `${service}.${UPSTREAM_NS}.svc.cluster.local`;

/** A CA and a server certificate for both upstream names, made with openssl. */
export function upstreamCertificates(): { caPem: string; certPem: string; keyPem: string } {
  const dir = mkdtempSync(join(tmpdir(), 'egress-e2e-'));
  const run = (...args: string[]): void => void execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  try {
    run(
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-days',
      '2',
      '-subj',
      '/CN=egress e2e upstream CA',
      '-keyout',
      'ca.key',
      '-out',
      'ca.crt',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign',
    );
    run(
      'req',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-subj',
      '/CN=upstream',
      '-keyout',
      'srv.key',
      '-out',
      'srv.csr',
    );
    const ext = `subjectAltName=DNS:${host('allowed-upstream')},DNS:${host('denied-upstream')}\nextendedKeyUsage=serverAuth\n`;
    execFileSync('sh', ['-c', `printf '%s' "$EXT" > ext.cnf`], {
      cwd: dir,
      env: { ...process.env, EXT: ext },
    });
    run(
      'x509',
      '-req',
      '-in',
      'srv.csr',
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-days',
      '2',
      '-extfile',
      'ext.cnf',
      '-out',
      'srv.crt',
    );
    const read = (f: string): string => readFileSync(join(dir, f), 'utf8');
    return { caPem: read('ca.crt'), certPem: read('srv.crt'), keyPem: read('srv.key') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const SERVER = `
const http = require('node:http'), https = require('node:https');
const handler = (scheme) => (req, res) => {
  let size = 0;
  req.on('data', (c) => (size += c.length));
  req.on('end', () => {
    console.log(JSON.stringify({ scheme, method: req.method, host: req.headers.host, url: req.url, headers: req.headers }));
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ upstream: 'egress-e2e', scheme, method: req.method, host: req.headers.host, url: req.url, size }));
  });
};
http.createServer({ keepAliveTimeout: 30000 }, handler('http')).listen(${HTTP_PORT});
https.createServer({ cert: process.env.TLS_CERT, key: process.env.TLS_KEY }, handler('https')).listen(${HTTPS_PORT});
`;

/** Creates (or replaces) the namespace's Pod and Services, and waits for the Pod. */
export async function startUpstream(
  kube: KubeClients,
  tls: { certPem: string; keyPem: string },
): Promise<k8s.V1Pod> {
  await kube.core.createNamespace({ body: { metadata: { name: UPSTREAM_NS } } }).catch((err: unknown) => {
    if (apiStatus(err) !== 409) throw err;
  });
  await kube.core
    .deleteNamespacedPod({ name: 'upstream', namespace: UPSTREAM_NS, gracePeriodSeconds: 0 })
    .catch((err: unknown) => {
      if (!isNotFound(err)) throw err;
    });
  for (let i = 0; i < 60; i++) {
    const pods = await kube.core.listNamespacedPod({
      namespace: UPSTREAM_NS,
      fieldSelector: 'metadata.name=upstream',
    });
    if (pods.items.length === 0) break;
    await new Promise((r) => setTimeout(r, 1000));
  }
  await kube.core.createNamespacedPod({
    namespace: UPSTREAM_NS,
    body: {
      metadata: { name: 'upstream', labels: { app: 'egress-e2e-upstream' } },
      spec: {
        automountServiceAccountToken: false,
        enableServiceLinks: false,
        terminationGracePeriodSeconds: 1,
        securityContext: { runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } },
        containers: [
          {
            name: 'main',
            image: AGENT_IMAGE,
            imagePullPolicy: 'IfNotPresent',
            command: ['/usr/bin/node', '-e', SERVER],
            env: [
              { name: 'TLS_CERT', value: tls.certPem },
              { name: 'TLS_KEY', value: tls.keyPem },
            ],
            readinessProbe: { tcpSocket: { port: HTTP_PORT }, periodSeconds: 1 },
            securityContext: {
              allowPrivilegeEscalation: false,
              capabilities: { drop: ['ALL'] },
              readOnlyRootFilesystem: true,
            },
          },
        ],
      },
    },
  });
  for (const name of ['allowed-upstream', 'denied-upstream']) {
    await kube.core
      .createNamespacedService({
        namespace: UPSTREAM_NS,
        body: {
          metadata: { name },
          spec: {
            selector: { app: 'egress-e2e-upstream' },
            ports: [
              { name: 'http', port: HTTP_PORT, targetPort: HTTP_PORT },
              { name: 'https', port: HTTPS_PORT, targetPort: HTTPS_PORT },
            ],
          },
        },
      })
      .catch((err: unknown) => {
        if (apiStatus(err) !== 409) throw err;
      });
  }
  return waitForPod(kube.core, { namespace: UPSTREAM_NS, name: 'upstream' }, podReady, 120_000);
}

/** The upstream's request log lines (JSON), newest last. */
export async function upstreamLog(
  kube: KubeClients,
): Promise<Array<{ scheme: string; url: string; headers: Record<string, string> }>> {
  const text = await kube.core.readNamespacedPodLog({
    name: 'upstream',
    namespace: UPSTREAM_NS,
    container: 'main',
  });
  return String(text)
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { scheme: string; url: string; headers: Record<string, string> });
}

/** Removes the namespace. */
export async function stopUpstream(kube: KubeClients): Promise<void> {
  await kube.core.deleteNamespace({ name: UPSTREAM_NS }).catch((err: unknown) => {
    if (!isNotFound(err)) throw err;
  });
}
