// Rendered-chart checks of the gateway's and the operator's side of the tenant boundary (issue 25):
// the gateway's Pod reads and identity check, its egress NetworkPolicy, the port route's per-key
// budget, cookies and WebSocket origins, the operator's RuntimeClass reads and its egress proxy URL. Imported by
// chart-checks.test.mjs (the file `make chart-lint` runs); the policy and RBAC: tenancy.mjs.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { env, render, template } from '../chart-render.mjs';

const GATEWAY = 'rel-sandbox-platform-gateway';

describe('gateway: Pod identity check and egress', () => {
  const egress = (r) => r.find('NetworkPolicy', `${GATEWAY}-egress`);

  it('reads Pods in every sandbox namespace (the identity check), whatever the transport', () => {
    const r = render(['sandboxNamespaces={sandboxes,team-b}']);
    for (const ns of ['sandboxes', 'team-b']) {
      const role = r.objects.find(
        (o) => o.kind === 'Role' && o.metadata.name === GATEWAY && o.metadata.namespace === ns,
      );
      const pods = role.rules.filter((x) => x.resources.includes('pods')).flatMap((x) => x.verbs);
      assert.deepEqual(pods, ['get', 'list', 'watch']);
      assert.ok(
        !role.rules.some((x) => x.resources.includes('pods/exec')),
        'pods/exec only with KubernetesExec',
      );
    }
    assert.equal(env(r.find('Deployment', GATEWAY)).GATEWAY_POD_IDENTITY_CHECK, 'true');
    const off = render(['gateway.podIdentityCheck=false']).find('Deployment', GATEWAY);
    assert.equal(env(off).GATEWAY_POD_IDENTITY_CHECK, 'false');
  });

  it('egress: sandbox Pods on the agent port and the proxied range, the API server, DNS; nothing else', () => {
    const np = egress(render(['sandboxNamespaces={sandboxes,team-b}']));
    assert.deepEqual(np.spec.policyTypes, ['Egress']);
    assert.deepEqual(np.spec.podSelector.matchLabels['app.kubernetes.io/component'], 'gateway');
    assert.deepEqual(np.spec.egress, [
      {
        to: [
          {
            namespaceSelector: {
              matchExpressions: [
                { key: 'kubernetes.io/metadata.name', operator: 'In', values: ['sandboxes', 'team-b'] },
              ],
            },
            podSelector: {
              matchLabels: {
                'app.kubernetes.io/component': 'sandbox',
                'app.kubernetes.io/managed-by': 'sandbox-operator',
              },
            },
          },
        ],
        ports: [
          { protocol: 'TCP', port: 8090 },
          { protocol: 'TCP', port: 1024, endPort: 65535 },
        ],
      },
      { to: [{ ipBlock: { cidr: '198.18.0.1/32' } }], ports: [{ protocol: 'TCP', port: 6443 }] },
      {
        to: [
          {
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } },
            podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } },
          },
        ],
        ports: [
          { protocol: 'UDP', port: 53 },
          { protocol: 'TCP', port: 53 },
        ],
      },
      // The egress proxy's audit API (egressProxy.enabled, the default; ADR 0034), release namespace only.
      {
        to: [
          {
            podSelector: {
              matchLabels: {
                'app.kubernetes.io/component': 'egress-proxy',
                'app.kubernetes.io/instance': 'rel',
                'app.kubernetes.io/name': 'sandbox-platform',
              },
            },
          },
        ],
        ports: [{ protocol: 'TCP', port: 8091 }],
      },
    ]);
    const noProxy = egress(render(['sandboxNamespaces={sandboxes,team-b}', 'egressProxy.enabled=false']));
    assert.equal(noProxy.spec.egress.length, 3, 'no audit rule without the egress proxy');
  });

  it('the sandbox side matches: what the gateway may send, sandbox Pods admit from the gateway', () => {
    const r = render(['gateway.ports.allowed.min=3000', 'gateway.ports.allowed.max=9000']);
    const out = egress(r).spec.egress[0].ports;
    const inn = r.find('NetworkPolicy', 'sandbox-ingress-from-gateway').spec.ingress[0].ports;
    assert.deepEqual(out, inn);
  });

  it('the trace receiver while tracing is on: its port, at its address when it is an IPv4 literal', () => {
    const rule = (sets) => egress(render(sets)).spec.egress[4]; // after the audit rule
    assert.equal(rule([]), undefined, 'no rule while tracing is off');
    assert.deepEqual(rule(['gateway.tracing.otlpEndpoint=http://198.18.0.1:43170']), {
      ports: [{ protocol: 'TCP', port: 43170 }],
      to: [{ ipBlock: { cidr: '198.18.0.1/32' } }],
    });
    assert.deepEqual(rule(['gateway.tracing.otlpEndpoint=http://otel-collector.observability:4318']), {
      ports: [{ protocol: 'TCP', port: 4318 }],
    });
    assert.deepEqual(rule(['gateway.tracing.otlpEndpoint=https://traces.example.com']).ports, [
      { protocol: 'TCP', port: 443 },
    ]);
    assert.deepEqual(
      rule([
        'gateway.tracing.otlpEndpoint=http://otel-collector.observability:4318',
        'networkPolicy.gateway.tracingTo[0].namespaceSelector.matchLabels.name=observability',
      ]).to,
      [{ namespaceSelector: { matchLabels: { name: 'observability' } } }],
    );
  });

  it('the API server values map to the rule; restrictEgress=false leaves the policy out', () => {
    const np = egress(
      render([
        'networkPolicy.apiServer.cidrs={10.0.0.10/32,10.0.0.11/32}',
        'networkPolicy.apiServer.port=443',
      ]),
    );
    assert.deepEqual(np.spec.egress[1], {
      to: [{ ipBlock: { cidr: '10.0.0.10/32' } }, { ipBlock: { cidr: '10.0.0.11/32' } }],
      ports: [{ protocol: 'TCP', port: 443 }],
    });
    assert.equal(egress(render(['networkPolicy.gateway.restrictEgress=false'])), undefined);
  });
});

describe('gateway: port route budget, cookies and WebSocket origins (issue 25)', () => {
  it('map 1:1 to GATEWAY_PORT_PROXY_* and GATEWAY_ALLOWED_ORIGINS; same origin only by default', () => {
    const keys = (r) =>
      Object.fromEntries(
        Object.entries(env(r.find('Deployment', GATEWAY))).filter(
          ([k]) => k.startsWith('GATEWAY_PORT_PROXY_') || k === 'GATEWAY_ALLOWED_ORIGINS',
        ),
      );
    assert.deepEqual(keys(render()), {
      GATEWAY_PORT_PROXY_MAX_SOCKETS_PER_KEY: '64',
      GATEWAY_PORT_PROXY_IDLE_TIMEOUT_SECONDS: '30',
      GATEWAY_PORT_PROXY_FORWARD_COOKIES: 'false',
      GATEWAY_ALLOWED_ORIGINS: '',
    });
    const set = render([
      'gateway.ports.maxSocketsPerKey=8',
      'gateway.ports.idleTimeoutSeconds=5',
      'gateway.ports.forwardCookies=true',
      'gateway.allowedOrigins={https://app.example.com,http://localhost:3000}',
    ]);
    assert.deepEqual(keys(set), {
      GATEWAY_PORT_PROXY_MAX_SOCKETS_PER_KEY: '8',
      GATEWAY_PORT_PROXY_IDLE_TIMEOUT_SECONDS: '5',
      GATEWAY_PORT_PROXY_FORWARD_COOKIES: 'true',
      GATEWAY_ALLOWED_ORIGINS: 'https://app.example.com,http://localhost:3000',
    });
    assert.notEqual(
      template(['gateway.allowedOrigins={app.example.com}']).status,
      0,
      'an origin has a scheme',
    );
  });
});

describe('operator: RuntimeClass reads', () => {
  it('get, list and watch runtimeclasses, cluster-wide and read-only', () => {
    const r = render();
    const role = r.find('ClusterRole', 'rel-sandbox-platform-operator-sandbox-system-runtimeclasses');
    assert.deepEqual(role.rules, [
      { apiGroups: ['node.k8s.io'], resources: ['runtimeclasses'], verbs: ['get', 'list', 'watch'] },
    ]);
    const binding = r.find('ClusterRoleBinding', role.metadata.name);
    assert.deepEqual(binding.subjects, [
      { kind: 'ServiceAccount', name: 'rel-sandbox-platform-operator', namespace: 'sandbox-system' },
    ]);
  });
});

describe('operator: sandbox Pods use the egress proxy (ADR 0034)', () => {
  it("names the proxy's Service and port while egressProxy.enabled (the default); nothing without it", () => {
    const url = (sets) =>
      env(render(sets).find('Deployment', 'rel-sandbox-platform-operator')).SANDBOX_EGRESS_PROXY_URL;
    assert.equal(url([]), 'http://rel-sandbox-platform-egress-proxy.sandbox-system.svc:3128');
    assert.equal(
      url(['egressProxy.port=3129']),
      'http://rel-sandbox-platform-egress-proxy.sandbox-system.svc:3129',
    );
    assert.equal(url(['egressProxy.enabled=false']), undefined);
  });
});
