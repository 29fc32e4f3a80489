// Rendered-chart checks of the egress drop reporter (issue 30, "a direct connection that bypasses
// the proxy: refused, and the refusal is in the audit"; docs/egress.md): the DaemonSet is there
// while egressProxy.enabled and dropAudit.enabled, runs in the host network with CAP_NET_ADMIN
// only, mounts the token the proxy publishes (never the master key), maps its env 1:1 to egress-proxy/src/drops/config.ts, and the
// proxy's audit port admits egressProxy.dropAudit.nodeCidrs. Imported by chart-checks.test.mjs.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';

import { container, env, render, repo } from '../chart-render.mjs';

const REPORTER = 'rel-sandbox-platform-egress-drop-reporter';
const reporter = (r) => r.find('DaemonSet', REPORTER);

describe('egress drop reporter (direct connections in the audit)', () => {
  it('by default: a DaemonSet on every node, host network, the proxy image running the reporter', () => {
    const r = render();
    const ds = reporter(r);
    assert.ok(ds, 'the drop reporter DaemonSet');
    const pod = ds.spec.template.spec;
    assert.equal(pod.hostNetwork, true);
    assert.equal(pod.dnsPolicy, 'ClusterFirstWithHostNet');
    assert.equal(pod.automountServiceAccountToken, false);
    assert.deepEqual(pod.tolerations, [{ operator: 'Exists' }]);
    const c = container(ds);
    assert.equal(c.image, 'localhost/sandbox-platform/egress-proxy:dev');
    assert.deepEqual(c.command, ['/usr/bin/node', '/opt/egress-proxy/egress-drop-reporter.mjs']);
    const e = env(ds);
    assert.equal(e.DROPS_AUDIT_URL, 'http://rel-sandbox-platform-egress-proxy.sandbox-system.svc:8091');
    assert.equal(e.DROPS_NFLOG_GROUP, '100');
    assert.equal(e.DROPS_TOKEN_FILE, '/etc/sandbox/drops-token/token');
    // The token the proxy publishes, never the master key.
    assert.deepEqual(
      pod.volumes.map((v) => v.secret?.secretName),
      ['rel-sandbox-platform-egress-proxy-drops-token'],
    );
    assert.equal(
      env(r.find('Deployment', 'rel-sandbox-platform-egress-proxy')).EGRESS_DROPS_TOKEN_SECRET,
      'rel-sandbox-platform-egress-proxy-drops-token',
    );
    const role = r.find('Role', 'rel-sandbox-platform-egress-proxy');
    assert.deepEqual(role.rules.at(-1), {
      apiGroups: [''],
      resources: ['secrets'],
      resourceNames: ['rel-sandbox-platform-egress-proxy-drops-token'],
      verbs: ['update'],
    });
    const sa = r.find('ServiceAccount', REPORTER);
    assert.equal(sa.automountServiceAccountToken, false);
  });

  it('CAP_NET_ADMIN only (all else dropped), no privilege escalation, a read-only root', () => {
    const c = container(reporter(render()));
    assert.deepEqual(c.securityContext.capabilities, { drop: ['ALL'], add: ['NET_ADMIN'] });
    assert.equal(c.securityContext.allowPrivilegeEscalation, false);
    assert.equal(c.securityContext.readOnlyRootFilesystem, true);
    assert.equal(c.securityContext.privileged, undefined);
    // Root: Kubernetes gives a non-root user no ambient capabilities, and NFLOG's bind needs one.
    assert.equal(c.securityContext.runAsUser, 0);
  });

  it('absent when dropAudit.enabled=false or without the proxy', () => {
    assert.equal(reporter(render(['egressProxy.dropAudit.enabled=false'])), undefined);
    assert.equal(reporter(render(['egressProxy.enabled=false'])), undefined);
  });

  it('never mounts the master key, also with masterKey.existingSecret', () => {
    const pod = reporter(render(['masterKey.existingSecret=platform-master-key'])).spec.template.spec;
    assert.doesNotMatch(JSON.stringify(pod), /master-key/);
  });

  it('every env key is one documented in egress-proxy/src/drops/config.ts', () => {
    const config = readFileSync(join(repo, 'egress-proxy/src/drops/config.ts'), 'utf8');
    const keys = Object.keys(env(reporter(render())));
    assert.ok(keys.length >= 8);
    for (const k of keys)
      assert.match(config, new RegExp(`/\\*\\* ${k} \\(`), `${k} documented in config.ts`);
  });

  it("the proxy's audit port admits dropAudit.nodeCidrs (and no ipBlock without them)", () => {
    const ingress = (r) => r.find('NetworkPolicy', 'rel-sandbox-platform-egress-proxy-ingress').spec.ingress;
    const blocks = (rules) => rules.flatMap((x) => x.from.filter((f) => f.ipBlock));
    assert.deepEqual(blocks(ingress(render())), []);
    const rules = ingress(render(['egressProxy.dropAudit.nodeCidrs={10.0.0.0/24,fd00::/64}']));
    const node = rules.find((x) => x.from.some((f) => f.ipBlock));
    assert.deepEqual(node, {
      from: [{ ipBlock: { cidr: '10.0.0.0/24' } }, { ipBlock: { cidr: 'fd00::/64' } }],
      ports: [{ protocol: 'TCP', port: 8091 }],
    });
    const off = ingress(
      render(['egressProxy.dropAudit.nodeCidrs={10.0.0.0/24}', 'egressProxy.dropAudit.enabled=false']),
    );
    assert.deepEqual(blocks(off), []);
  });
});

describe("the sandboxes' DNS in the egress proxy (egressProxy.dns)", () => {
  const PROXY = 'rel-sandbox-platform-egress-proxy';
  const sandboxEgress = (r) => r.find('NetworkPolicy', 'sandbox-egress').spec.egress;
  const dnsPeers = (rules) =>
    rules.filter((x) => x.to?.some((t) => t.podSelector?.matchLabels?.['k8s-app'] === 'kube-dns'));

  it('by default: the proxy serves it (Service 53 -> 5353, UDP and TCP), the operator points sandbox Pods at it', () => {
    const r = render();
    const e = env(r.find('Deployment', PROXY));
    assert.equal(e.EGRESS_DNS_PORT, '5353');
    assert.equal(
      e.EGRESS_DNS_SELF_NAMES,
      `${PROXY}.sandbox-system.svc,${PROXY}.sandbox-system.svc.cluster.local`,
    );
    assert.equal(e.EGRESS_DNS_TTL_SECONDS, '30');
    const ports = r.find('Service', PROXY).spec.ports.filter((p) => p.name.startsWith('dns'));
    assert.deepEqual(ports, [
      { name: 'dns-udp', port: 53, targetPort: 'dns-udp', protocol: 'UDP' },
      { name: 'dns-tcp', port: 53, targetPort: 'dns-tcp', protocol: 'TCP' },
    ]);
    assert.equal(env(r.find('Deployment', 'rel-sandbox-platform-operator')).SANDBOX_EGRESS_DNS, 'proxy');
  });

  it('sandbox Pods may reach the proxy on the DNS port and the cluster DNS pods not at all; the proxy admits it', () => {
    const r = render();
    const rules = sandboxEgress(r);
    assert.deepEqual(dnsPeers(rules), []);
    const toProxy = rules.find((x) =>
      x.to?.some((t) => t.podSelector?.matchLabels?.['app.kubernetes.io/component'] === 'egress-proxy'),
    );
    assert.deepEqual(toProxy.ports, [
      { protocol: 'TCP', port: 3128 },
      { protocol: 'UDP', port: 5353 },
      { protocol: 'TCP', port: 5353 },
    ]);
    const ingress = r.find('NetworkPolicy', `${PROXY}-ingress`).spec.ingress[0];
    assert.deepEqual(ingress.ports, toProxy.ports);
  });

  it('off: no DNS listener or Service port, the operator keeps the cluster DNS, sandboxes reach the cluster DNS pods', () => {
    const r = render(['egressProxy.dns.enabled=false']);
    assert.equal(env(r.find('Deployment', PROXY)).EGRESS_DNS_PORT, '0');
    assert.equal(
      r.find('Service', PROXY).spec.ports.some((p) => p.name.startsWith('dns')),
      false,
    );
    assert.equal(env(r.find('Deployment', 'rel-sandbox-platform-operator')).SANDBOX_EGRESS_DNS, undefined);
    assert.equal(dnsPeers(sandboxEgress(r)).length, 1);
    // The proxy off: the cluster DNS as before, whatever egressProxy.dns says.
    const off = render(['egressProxy.enabled=false']);
    assert.equal(dnsPeers(sandboxEgress(off)).length, 1);
    assert.equal(env(off.find('Deployment', 'rel-sandbox-platform-operator')).SANDBOX_EGRESS_DNS, undefined);
  });
});
