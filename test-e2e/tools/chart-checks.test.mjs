// Checks of the rendered chart that kubeconform cannot make (it validates shapes, not intent):
// the master key with and without masterKey.existingSecret, the admission policy, the sandbox
// ResourceQuota, the operator's and the gateway's metrics ports, tracing settings, and the
// monitoring objects; chart-checks/tenancy.mjs and gateway.mjs (imported below, their describe
// blocks register on import) the tenant RBAC, the sandbox policy, the gateway's egress policy and
// port-route values (issue 25); chart-checks/egress.mjs the egress drop reporter (issue 30).
// Run by `make chart-lint` (node --test, HELM=<pinned helm>); each case renders with `helm template`.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';

import { chart, container, env, render, template } from './chart-render.mjs';
import './chart-checks/tenancy.mjs';
import './chart-checks/gateway.mjs';
import './chart-checks/egress.mjs';

const masterKeyVolume = (deployment) =>
  deployment.spec.template.spec.volumes.find((v) => v.name === 'master-key');

describe('master key', () => {
  it('without existingSecret: a generated Secret, with a loud warning when rendered without a cluster', () => {
    const r = render();
    const secret = r.find('Secret', 'rel-sandbox-platform-master-key');
    assert.ok(secret, 'the generated master key Secret');
    assert.equal(Buffer.from(secret.data['master-key'], 'base64').length, 64);
    assert.equal(secret.metadata.annotations['sandbox.dev/master-key-source'], 'generated-at-render-time');
    assert.match(
      r.text,
      /# WARNING: rendered without a cluster .* NEW random key, different on every render/s,
    );
    for (const name of ['rel-sandbox-platform-operator', 'rel-sandbox-platform-gateway']) {
      assert.equal(
        masterKeyVolume(r.find('Deployment', name)).secret.secretName,
        'rel-sandbox-platform-master-key',
      );
    }
  });

  it('two renders without a cluster make two different keys (what the warning is about)', () => {
    const key = () => render().find('Secret', 'rel-sandbox-platform-master-key').data['master-key'];
    assert.notEqual(key(), key());
  });

  it('with existingSecret: no Secret rendered, no warning, the operator and the gateway mount that Secret', () => {
    const r = render(['masterKey.existingSecret=platform-master-key']);
    assert.equal(
      r.objects.filter((o) => o.kind === 'Secret' && /master-key/.test(o.metadata.name)).length,
      0,
    );
    assert.doesNotMatch(r.text, /WARNING/);
    for (const name of ['rel-sandbox-platform-operator', 'rel-sandbox-platform-gateway']) {
      const d = r.find('Deployment', name);
      assert.equal(masterKeyVolume(d).secret.secretName, 'platform-master-key');
      assert.equal(env(d).SANDBOX_MASTER_KEY_FILE, '/etc/sandbox/master-key/master-key');
      const mount = container(d).volumeMounts.find((m) => m.name === 'master-key');
      assert.equal(mount.mountPath, '/etc/sandbox/master-key');
    }
  });

  it('generate=false refuses a render without existingSecret, naming the fix', () => {
    const res = template(['masterKey.generate=false']);
    assert.notEqual(res.status, 0);
    assert.match(res.stderr, /masterKey.generate is false and masterKey.existingSecret is empty/);
    assert.equal(template(['masterKey.generate=false', 'masterKey.existingSecret=k']).status, 0);
  });
});

describe('admission of SandboxSessions in unserved namespaces', () => {
  it('a ValidatingAdmissionPolicy on creates, bound to every namespace but the sandbox namespaces', () => {
    const r = render(['sandboxNamespaces={sandboxes,team-b}', 'apiKeys.keys[0].namespaces[0]=sandboxes']);
    const policy = r.find('ValidatingAdmissionPolicy', 'rel-sandbox-platform-served-namespaces');
    assert.equal(policy.spec.failurePolicy, 'Fail');
    assert.deepEqual(policy.spec.matchConstraints.resourceRules, [
      {
        apiGroups: ['sandbox.dev'],
        apiVersions: ['*'],
        operations: ['CREATE'],
        resources: ['sandboxsessions', 'sandboxpools'],
      },
    ]);
    assert.match(policy.spec.validations[0].messageExpression, /sandboxNamespaces/);
    const binding = r.find('ValidatingAdmissionPolicyBinding', policy.metadata.name);
    assert.equal(binding.spec.policyName, policy.metadata.name);
    assert.deepEqual(binding.spec.validationActions, ['Deny']);
    assert.deepEqual(binding.spec.matchResources.namespaceSelector.matchExpressions, [
      { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['sandboxes', 'team-b'] },
    ]);
  });

  it('off with admission.refuseUnservedNamespaces=false', () => {
    const r = render(['admission.refuseUnservedNamespaces=false']);
    assert.equal(r.find('ValidatingAdmissionPolicy', 'rel-sandbox-platform-served-namespaces'), undefined);
    assert.equal(
      r.find('ValidatingAdmissionPolicyBinding', 'rel-sandbox-platform-served-namespaces'),
      undefined,
    );
  });
});

describe('sandbox ResourceQuota', () => {
  it('one per sandbox namespace, with the values', () => {
    const r = render([
      'sandboxNamespaces={sandboxes,team-b}',
      'sandboxQuota.sessions=7',
      'sandboxQuota.limitsMemory=8Gi',
    ]);
    const quotas = r.objects.filter((o) => o.kind === 'ResourceQuota');
    assert.deepEqual(
      quotas.map((q) => q.metadata.namespace),
      ['sandboxes', 'team-b'],
    );
    assert.deepEqual(quotas[0].spec.hard, {
      'count/sandboxsessions.sandbox.dev': '7',
      pods: '100',
      'requests.cpu': '10',
      'requests.memory': '25Gi',
      'limits.cpu': '100',
      'limits.memory': '8Gi',
      persistentvolumeclaims: '100',
      'requests.storage': '200Gi',
    });
  });

  it('sessions=0 leaves session counting out, the other limits stay', () => {
    const hard = render(['sandboxQuota.sessions=0']).find('ResourceQuota').spec.hard;
    assert.equal(hard['count/sandboxsessions.sandbox.dev'], undefined);
    assert.equal(hard.pods, '100');
  });

  it('off with sandboxQuota.enabled=false', () => {
    assert.equal(render(['sandboxQuota.enabled=false']).find('ResourceQuota'), undefined);
  });
});

describe('operator telemetry settings', () => {
  it('metrics on their own port (9090, named metrics), probes on 8080; tracing off by default', () => {
    const d = render().find('Deployment', 'rel-sandbox-platform-operator');
    assert.equal(env(d).METRICS_PORT, '9090');
    assert.equal(env(d).HTTP_PORT, '8080');
    assert.deepEqual(
      container(d).ports.map((p) => [p.name, p.containerPort]),
      [
        ['http', 8080],
        ['metrics', 9090],
      ],
    );
    assert.equal(container(d).livenessProbe.httpGet.port, 'http');
    assert.equal(Object.keys(env(d)).filter((k) => k.startsWith('OTEL_')).length, 0);
  });

  it('tracing values map 1:1 to the OTEL_* variables', () => {
    const d = render([
      'operator.tracing.otlpEndpoint=http://otel-collector.observability:4318',
      'operator.tracing.protocol=http/json',
      'operator.tracing.samplerArg=0.1',
    ]).find('Deployment', 'rel-sandbox-platform-operator');
    assert.deepEqual(Object.fromEntries(Object.entries(env(d)).filter(([k]) => k.startsWith('OTEL_'))), {
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel-collector.observability:4318',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.1',
      OTEL_SERVICE_NAME: 'sandbox-operator',
    });
  });

  it('the schema refuses the metrics port on the probe port', () => {
    const res = template(['operator.metricsPort=8080']);
    assert.notEqual(res.status, 0);
    assert.match(res.stderr, /metricsPort/);
  });
});

describe('gateway metrics port', () => {
  const gateway = (r) => r.find('Deployment', 'rel-sandbox-platform-gateway');
  const gatewayPolicy = (r) => r.find('NetworkPolicy', 'rel-sandbox-platform-gateway-ingress');

  it('/metrics on its own port (9090, named metrics), the API on 8080; a ClusterIP metrics Service', () => {
    const r = render();
    assert.equal(env(gateway(r)).GATEWAY_METRICS_PORT, '9090');
    assert.equal(env(gateway(r)).GATEWAY_PORT, '8080');
    assert.deepEqual(
      container(gateway(r)).ports.map((p) => [p.name, p.containerPort]),
      [
        ['http', 8080],
        ['metrics', 9090],
      ],
    );
    const api = r.find('Service', 'rel-sandbox-platform-gateway');
    assert.deepEqual(
      api.spec.ports.map((p) => p.name),
      ['http'],
      'the API Service does not carry the metrics port',
    );
    const metrics = r.find('Service', 'rel-sandbox-platform-gateway-metrics');
    assert.equal(metrics.spec.type, 'ClusterIP');
    assert.deepEqual(metrics.spec.ports, [
      { name: 'metrics', port: 9090, targetPort: 'metrics', protocol: 'TCP' },
    ]);
    assert.deepEqual(metrics.spec.selector, api.spec.selector);
  });

  it('gateway.metricsPort maps to the env, the container port, the Service and the policy', () => {
    const r = render([
      'gateway.metricsPort=9102',
      'networkPolicy.gateway.metricsFrom[0].namespaceSelector.matchLabels.name=monitoring',
    ]);
    assert.equal(env(gateway(r)).GATEWAY_METRICS_PORT, '9102');
    assert.equal(container(gateway(r)).ports[1].containerPort, 9102);
    assert.equal(r.find('Service', 'rel-sandbox-platform-gateway-metrics').spec.ports[0].port, 9102);
    assert.deepEqual(gatewayPolicy(r).spec.ingress[1], {
      ports: [{ protocol: 'TCP', port: 9102 }],
      from: [{ namespaceSelector: { matchLabels: { name: 'monitoring' } } }],
    });
  });

  it('the NetworkPolicy keeps the API rule and opens the metrics port to metricsFrom only', () => {
    const closed = gatewayPolicy(render()).spec.ingress;
    assert.deepEqual(closed, [{ ports: [{ protocol: 'TCP', port: 8080 }] }], 'no metrics rule by default');
    const open = gatewayPolicy(
      render([
        'networkPolicy.gateway.ingressFrom[0].podSelector.matchLabels.app=ingress',
        'networkPolicy.gateway.metricsFrom[0].podSelector.matchLabels.app=prometheus',
      ]),
    ).spec.ingress;
    assert.deepEqual(open, [
      {
        ports: [{ protocol: 'TCP', port: 8080 }],
        from: [{ podSelector: { matchLabels: { app: 'ingress' } } }],
      },
      {
        ports: [{ protocol: 'TCP', port: 9090 }],
        from: [{ podSelector: { matchLabels: { app: 'prometheus' } } }],
      },
    ]);
  });

  it('the schema refuses the metrics port on the API port', () => {
    const res = template(['gateway.metricsPort=8080']);
    assert.notEqual(res.status, 0);
    assert.match(res.stderr, /metricsPort/);
  });
});

describe('default runtime class of sessions', () => {
  it('is gvisor by default (secure by default, issue 25); empty leaves the env line out', () => {
    const name = 'rel-sandbox-platform-operator';
    assert.equal(env(render().find('Deployment', name)).SANDBOX_DEFAULT_RUNTIME_CLASS_NAME, 'gvisor');
    const d = render(['operator.sandboxDefaults.runtimeClassName=']).find('Deployment', name);
    assert.equal('SANDBOX_DEFAULT_RUNTIME_CLASS_NAME' in env(d), false);
  });

  it('the schema refuses a name that is no DNS subdomain', () => {
    const res = template(['operator.sandboxDefaults.runtimeClassName=Bad_Name']);
    assert.notEqual(res.status, 0);
    assert.match(res.stderr, /runtimeClassName/);
  });
});

describe('monitoring objects', () => {
  const ALL = [
    'monitoring.serviceMonitor.enabled=true',
    'monitoring.podMonitor.enabled=true',
    'monitoring.prometheusRule.enabled=true',
    'monitoring.grafanaDashboard.enabled=true',
  ];

  it('none by default', () => {
    const kinds = render().objects.map((o) => o.kind);
    for (const kind of ['ServiceMonitor', 'PodMonitor', 'PrometheusRule'])
      assert.ok(!kinds.includes(kind), kind);
    assert.equal(render().find('ConfigMap', 'rel-sandbox-platform-dashboard'), undefined);
  });

  it('a ServiceMonitor of the gateway metrics Service and a PodMonitor of the operator metrics port', () => {
    const r = render([...ALL, 'monitoring.serviceMonitor.labels.release=kps']);
    const sm = r.find('ServiceMonitor');
    assert.equal(sm.metadata.labels.release, 'kps');
    const selected = r.objects.filter(
      (o) =>
        o.kind === 'Service' &&
        Object.entries(sm.spec.selector.matchLabels).every(([k, v]) => o.metadata.labels[k] === v),
    );
    assert.deepEqual(
      selected.map((o) => o.metadata.name),
      ['rel-sandbox-platform-gateway-metrics'],
      'the selector picks the metrics Service only, never the API Service',
    );
    assert.deepEqual(sm.spec.endpoints[0], {
      port: 'metrics',
      path: '/metrics',
      interval: '30s',
      scheme: 'http',
    });
    assert.ok(selected[0].spec.ports.some((p) => p.name === 'metrics'));
    const pm = r.find('PodMonitor');
    const operatorPods = r.find('Deployment', 'rel-sandbox-platform-operator').spec.template.metadata.labels;
    for (const [k, v] of Object.entries(pm.spec.selector.matchLabels)) assert.equal(operatorPods[k], v, k);
    assert.equal(pm.spec.podMetricsEndpoints[0].port, 'metrics');
  });

  it('a PrometheusRule with the seven alerts, the thresholds from values and alertLabels on each', () => {
    const r = render([
      ...ALL,
      'monitoring.prometheusRule.timeToReadyP95Seconds=42',
      'monitoring.prometheusRule.alertLabels.team=platform',
    ]);
    const rules = r.find('PrometheusRule').spec.groups.flatMap((g) => g.rules);
    assert.deepEqual(
      rules.map((x) => x.alert),
      [
        'SandboxOperatorNoLeader',
        'SandboxOperatorReconcileErrors',
        'SandboxSessionTimeToReadySlow',
        'SandboxGatewayHighErrorRate',
        'SandboxAgentErrors',
        'SandboxSessionsStuckNotReady',
        'SandboxOperatorHeapNearLimit',
      ],
    );
    for (const rule of rules) {
      assert.equal(rule.labels.team, 'platform');
      assert.ok(rule.labels.severity);
      assert.match(rule.expr, /namespace="sandbox-system"/);
      assert.doesNotMatch(JSON.stringify(rule), /\.Values|\.Release/);
    }
    assert.match(rules[2].expr, /> 42\s*$/);
  });

  it('the dashboard in a ConfigMap with the sidecar label, byte for byte the JSON file', () => {
    const r = render([...ALL, 'monitoring.grafanaDashboard.namespace=grafana']);
    const cm = r.find('ConfigMap', 'rel-sandbox-platform-dashboard');
    assert.equal(cm.metadata.namespace, 'grafana');
    assert.equal(cm.metadata.labels.grafana_dashboard, '1');
    const file = readFileSync(join(chart, 'dashboards/sandbox-platform.json'), 'utf8');
    assert.equal(cm.data['sandbox-platform.json'], file.trimEnd());
    assert.equal(JSON.parse(cm.data['sandbox-platform.json']).uid, 'sandbox-platform');
  });
});

describe('warm pools (docs/adr/0016)', () => {
  it('opens the agent port of pool Pods, and of no other Pod, to operator Pods only', () => {
    const r = render(['sandboxNamespaces={sandboxes}']);
    const np = r.find('NetworkPolicy', 'sandbox-ingress-bind-from-operator');
    assert.ok(np, 'the bind NetworkPolicy');
    assert.equal(np.metadata.namespace, 'sandboxes');
    assert.deepEqual(np.spec.podSelector.matchExpressions, [{ key: 'sandbox.dev/pool', operator: 'Exists' }]);
    assert.deepEqual(np.spec.podSelector.matchLabels, {
      'app.kubernetes.io/component': 'sandbox',
      'app.kubernetes.io/managed-by': 'sandbox-operator',
    });
    assert.deepEqual(np.spec.ingress, [
      {
        from: [
          {
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'sandbox-system' } },
            podSelector: {
              matchLabels: {
                'app.kubernetes.io/name': 'sandbox-platform',
                'app.kubernetes.io/instance': 'rel',
                'app.kubernetes.io/component': 'operator',
              },
            },
          },
        ],
        ports: [{ protocol: 'TCP', port: 8090 }],
      },
    ]);
    // The gateway's policy is unchanged: it alone reaches every sandbox Pod.
    const gateway = r.find('NetworkPolicy', 'sandbox-ingress-from-gateway');
    assert.equal(gateway.spec.podSelector.matchExpressions, undefined);
  });

  it('admits the gateway to sandbox pods on the agent port and exactly gateway.ports.allowed, which it proxies', () => {
    const ports = (sets) =>
      render(sets).find('NetworkPolicy', 'sandbox-ingress-from-gateway').spec.ingress[0].ports;
    assert.deepEqual(ports([]), [
      { protocol: 'TCP', port: 8090 },
      { protocol: 'TCP', port: 1024, endPort: 65535 },
    ]);
    assert.deepEqual(ports(['gateway.ports.allowed.min=8000', 'gateway.ports.allowed.max=8000']), [
      { protocol: 'TCP', port: 8090 },
      { protocol: 'TCP', port: 8000 },
    ]);
    const gw = render(['gateway.ports.allowed.min=3000', 'gateway.ports.allowed.max=9000']).find(
      'Deployment',
      'rel-sandbox-platform-gateway',
    );
    assert.equal(env(gw).GATEWAY_PROXY_PORT_MIN, '3000');
    assert.equal(env(gw).GATEWAY_PROXY_PORT_MAX, '9000');
    assert.notEqual(template(['gateway.ports.allowed.min=9000', 'gateway.ports.allowed.max=3000']).status, 0);
    assert.notEqual(template(['gateway.ports.allowed.min=0']).status, 0);
  });

  it('maps operator.pool.bindTimeoutMs to POOL_BIND_TIMEOUT_MS, the agent port fixed', () => {
    const op = render(['operator.pool.bindTimeoutMs=750']).find(
      'Deployment',
      'rel-sandbox-platform-operator',
    );
    assert.equal(env(op).POOL_BIND_TIMEOUT_MS, '750');
    assert.equal(env(op).POOL_AGENT_PORT, '8090');
    assert.notEqual(template(['operator.pool.bindTimeoutMs=10']).status, 0);
  });

  it('lets the operator read pools, write their status and patch Pods (the claim), nothing more', () => {
    const role = render(['sandboxNamespaces={sandboxes}']).objects.find(
      (o) =>
        o.kind === 'Role' &&
        o.metadata.namespace === 'sandboxes' &&
        o.metadata.name === 'rel-sandbox-platform-operator',
    );
    const rule = (resource) =>
      role.rules.filter((x) => x.resources.includes(resource)).flatMap((x) => x.verbs);
    assert.deepEqual(rule('sandboxpools'), ['get', 'list', 'watch']);
    assert.deepEqual(rule('sandboxpools/status'), ['patch']);
    assert.ok(rule('pods').includes('patch'));
    assert.ok(!rule('pods').includes('update'));
  });

  it('refuses SandboxPools in unserved namespaces, as SandboxSessions', () => {
    const policy = render().find('ValidatingAdmissionPolicy', 'rel-sandbox-platform-served-namespaces');
    assert.deepEqual(policy.spec.matchConstraints.resourceRules[0].resources, [
      'sandboxsessions',
      'sandboxpools',
    ]);
  });
});
