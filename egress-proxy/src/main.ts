/**
 * Composition root of the egress proxy (docs/adr/0034): reads the configuration, starts the
 * session index (watches), the audit store and its API, the proxy with TLS interception, and
 * the probes; stops on SIGTERM.
 */
import { createHmac } from 'node:crypto';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { readFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { rootCertificates } from 'node:tls';

import * as k8s from '@kubernetes/client-node';
import {
  AUDIT_CLIENT_LABEL,
  AUDIT_DROPS_LABEL,
  AUDIT_KINDS,
  AUDIT_KEY_LABEL,
  readMasterKeyFile,
  startTelemetryServer,
  type AuditRecord,
} from '@sandbox-platform/api';

import { AuditQueue } from './audit/queue.js';
import { auditServer } from './audit/server.js';
import { AuditStore } from './audit/store.js';
import { loadConfig } from './config.js';
import { blockList, filteringLookup } from './dial.js';
import { DnsResponder } from './dns/responder.js';
import { startDnsServers, type DnsServers } from './dns/server.js';
import { TlsInterceptor } from './intercept.js';
import { KubeCaStore } from './kube/ca-store.js';
import { publishDropsToken } from './kube/drops-token.js';
import { KubeSecretReader } from './kube/secrets.js';
import { SessionIndex } from './kube/session-index.js';
import { createLogger } from './logger.js';
import { EgressProxy } from './proxy.js';

const config = loadConfig(process.env);
const log = createLogger(config.logLevel);
const masterKey = readMasterKeyFile(config.masterKeyFile);
const derive = (label: string): Buffer => createHmac('sha256', masterKey).update(label).digest();

const kc = new k8s.KubeConfig();
kc.loadFromDefault();

let exportRecord: ((r: AuditRecord) => void) | undefined;
let stopExport: (() => Promise<void>) | undefined;
if (config.otlpEndpoint) {
  const { startAuditLogExport } = await import('./audit/otel.js');
  const exp = startAuditLogExport(config.otlpEndpoint, config.serviceName);
  exportRecord = (r) => exp.emit(r);
  stopExport = () => exp.shutdown();
}
const store = new AuditStore({
  dir: config.auditDir,
  key: derive(AUDIT_KEY_LABEL),
  retentionSeconds: config.auditRetentionSeconds,
  maxRecordsPerSession: config.auditMaxRecords,
  onRecord: exportRecord,
});
const queue = new AuditQueue(
  (events) => store.append(events),
  (err) => log.error('audit append failed', { err: String(err) }),
);

const lookup = filteringLookup(blockList(config.blockedCidrs));
const ca = config.upstreamCaFile
  ? [...rootCertificates, readFileSync(config.upstreamCaFile, 'utf8')]
  : undefined;
const forwardDeps = {
  httpAgent: new Agent({ keepAlive: true, maxFreeSockets: 64, lookup }),
  httpsAgent: new HttpsAgent({ keepAlive: true, maxFreeSockets: 64, lookup, ca }),
  secrets: new KubeSecretReader(kc),
  timeoutMs: config.upstreamTimeoutMs,
};
const proxyRef: { proxy?: EgressProxy } = {};
const sessions = new SessionIndex({
  kc,
  namespaces: config.namespaces,
  defaults: config.defaults,
  onRulesChanged: (s) => {
    const closed = proxyRef.proxy?.revalidate(s) ?? 0;
    if (closed > 0)
      log.info('egress rules changed; tunnels closed', { namespace: s.namespace, session: s.name, closed });
  },
  log,
});
const cas = new KubeCaStore(kc, {
  platformNamespace: config.platformNamespace,
  secretPrefix: config.caSecretPrefix,
});
const interceptor = new TlsInterceptor({
  ...forwardDeps,
  sessions,
  cas,
  auditForward: (s, base, out) => proxyRef.proxy!.auditForward(s, base, out),
});
const proxy = new EgressProxy({
  ...forwardDeps,
  sessions,
  audit: (e) => queue.push(e),
  lookup,
  interceptor,
  helloTimeoutMs: 10_000,
  maxTunnelsPerSession: config.maxTunnelsPerSession,
});
proxyRef.proxy = proxy;

await sessions.start();
// Every sandbox namespace's CA is made (or read) and published now, not at its first intercepted
// request: the operator mounts the ConfigMap into sandbox Pods, which then trust it from the start
// (a Pod started before it exists gets it when the kubelet next syncs the volume). A failure is
// retried at the namespace's first interception.
for (const namespace of config.namespaces)
  cas
    .forNamespace(namespace)
    .catch((err: unknown) => log.warn('egress CA not published yet', { namespace, err: String(err) }));
const dropsToken = derive(AUDIT_DROPS_LABEL).toString('hex');
const audit = auditServer(
  store,
  derive(AUDIT_CLIENT_LABEL).toString('hex'),
  (msg, err) => log.error(msg, { err: String(err) }),
  // Direct connections the NetworkPolicy dropped, from the node reporters (src/drops/, docs/egress.md).
  { drops: { token: dropsToken, sessions } },
);
if (config.dropsTokenSecret) {
  // The reporters mount this Secret: the master key never leaves the platform's Deployments.
  const done = await publishDropsToken(kc, config.platformNamespace, config.dropsTokenSecret, dropsToken);
  log.info('drop reporters token published', { secret: config.dropsTokenSecret, done });
}
await new Promise<void>((r) => audit.listen(config.auditPort, '0.0.0.0', r));
await new Promise<void>((r) => proxy.server.listen(config.proxyPort, '0.0.0.0', r));
let dns: DnsServers | undefined;
if (config.dnsPort > 0) {
  const all =
    (fn: typeof dnsLookup | typeof lookup) =>
    (name: string): Promise<LookupAddress[]> =>
      new Promise((resolve, reject) =>
        (fn as typeof dnsLookup)(name, { all: true }, (err, addresses) =>
          err ? reject(err) : resolve(addresses),
        ),
      );
  const responder = new DnsResponder({
    sessions,
    resolve: all(lookup),
    resolveSelf: all(dnsLookup),
    selfNames: config.dnsSelfNames,
    ttlSeconds: config.dnsTtlSeconds,
    onRefused: ({ session, name, qtype }) =>
      queue.push({
        time: new Date().toISOString(),
        namespace: session.namespace,
        session: session.name,
        kind: AUDIT_KINDS.egress,
        actor: 'sandbox',
        outcome: 'denied',
        detail: { host: name, reason: 'dns-no-rule', scheme: 'dns', qtype },
      }),
  });
  dns = await startDnsServers(responder, config.dnsPort, '0.0.0.0', (msg, err) =>
    log.warn(msg, { err: String(err) }),
  );
}
const health = await startTelemetryServer({
  port: config.healthPort,
  isReady: () => sessions.synced(),
  onError: (path, err) => log.error('probe failed', { path, err: String(err) }),
});
const sweep = setInterval(() => {
  store.sweep().then(
    ({ dropped }) => dropped > 0 && log.info('audit retention applied', { dropped }),
    (err: unknown) => log.error('audit sweep failed', { err: String(err) }),
  );
  if (queue.dropped > 0) {
    log.warn('audit events dropped (queue full)', { dropped: queue.dropped });
    queue.dropped = 0;
  }
}, 60_000);
log.info('egress proxy listening', {
  proxyPort: config.proxyPort,
  auditPort: config.auditPort,
  dnsPort: config.dnsPort,
  namespaces: config.namespaces,
});

process.once('SIGTERM', () => {
  clearInterval(sweep);
  proxy.server.close();
  audit.close();
  health.close();
  void Promise.all([sessions.stop(), stopExport?.(), dns?.close()]).finally(() => process.exit(0));
});
