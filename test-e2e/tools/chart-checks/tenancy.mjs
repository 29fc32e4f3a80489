// Rendered-chart checks of the tenant boundary (issue 25; docs/adr/0028-policy-at-admission.md):
// the aggregated tenant ClusterRoles, the sandbox policy (one ValidatingAdmissionPolicy with the
// parameters of each sandbox namespace rendered into it, and its binding), the gateway's egress
// NetworkPolicy and Pod reads,
// the operator's RuntimeClass reads. Imported by chart-checks.test.mjs (the file `make chart-lint`
// runs); the API server's behaviour with these objects is tested in
// test-e2e/test/integration/control-plane/sandbox-policy.test.ts and tenant-rbac.test.ts.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';

import { env, render, template } from '../chart-render.mjs';

const GATEWAY = 'rel-sandbox-platform-gateway';
const POLICY = 'rel-sandbox-platform-sandbox-policy';

/** Runs `fn` with a values file of `values` (no --set escaping of `=`, `/`, `*`), then removes it. */
function withValues(values, fn) {
  const dir = mkdtempSync(join(tmpdir(), 'chart-check-'));
  try {
    const file = join(dir, 'values.json');
    writeFileSync(file, JSON.stringify(values));
    return fn([file]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
const renderWith = (values, sets = []) => withValues(values, (files) => render(sets, files));
const templateWith = (values, sets = []) => withValues(values, (files) => template(sets, files));

describe('tenant RBAC: aggregated to the built-in roles, never status', () => {
  it('view reads, edit and admin also write sessions and pools; no subresource anywhere', () => {
    const r = render();
    const view = r.find('ClusterRole', 'rel-sandbox-platform-tenant-view');
    const edit = r.find('ClusterRole', 'rel-sandbox-platform-tenant-edit');
    const labels = (role) =>
      Object.keys(role.metadata.labels).filter((k) =>
        k.startsWith('rbac.authorization.k8s.io/aggregate-to-'),
      );
    assert.deepEqual(labels(view).sort(), [
      'rbac.authorization.k8s.io/aggregate-to-admin',
      'rbac.authorization.k8s.io/aggregate-to-edit',
      'rbac.authorization.k8s.io/aggregate-to-view',
    ]);
    assert.deepEqual(labels(edit).sort(), [
      'rbac.authorization.k8s.io/aggregate-to-admin',
      'rbac.authorization.k8s.io/aggregate-to-edit',
    ]);
    assert.deepEqual(view.rules, [
      {
        apiGroups: ['sandbox.dev'],
        resources: ['sandboxsessions', 'sandboxpools'],
        verbs: ['get', 'list', 'watch'],
      },
    ]);
    assert.deepEqual(edit.rules, [
      {
        apiGroups: ['sandbox.dev'],
        resources: ['sandboxsessions', 'sandboxpools'],
        verbs: ['create', 'update', 'patch', 'delete', 'deletecollection'],
      },
    ]);
    for (const role of [view, edit])
      for (const rule of role.rules) for (const res of rule.resources) assert.ok(!res.includes('/'), res);
  });

  it('off with tenantRbac.aggregateToBuiltinRoles=false', () => {
    const r = render(['tenantRbac.aggregateToBuiltinRoles=false']);
    assert.equal(r.find('ClusterRole', 'rel-sandbox-platform-tenant-view'), undefined);
    assert.equal(r.find('ClusterRole', 'rel-sandbox-platform-tenant-edit'), undefined);
  });
});

describe('sandbox policy at admission', () => {
  /** The parameters of a namespace, as rendered into the policy's `params` variable. */
  const params = (r, ns) => {
    const policy = r.find('ValidatingAdmissionPolicy', POLICY);
    const v = policy?.spec.variables.find((x) => x.name === 'params');
    return v && { data: JSON.parse(v.expression.replace(/\[request\.namespace\]$/, ''))[ns] };
  };

  it('one policy on session creates and pool creates/updates, reason Forbidden on every rule', () => {
    const policy = render().find('ValidatingAdmissionPolicy', POLICY);
    assert.equal(policy.spec.failurePolicy, 'Fail');
    assert.equal(policy.spec.paramKind, undefined, 'no paramKind: see the template (kubernetes#130887)');
    assert.deepEqual(
      policy.spec.matchConstraints.resourceRules.map((x) => [x.resources, x.operations]),
      [
        [['sandboxsessions'], ['CREATE']],
        [['sandboxpools'], ['CREATE', 'UPDATE']],
      ],
    );
    assert.ok(policy.spec.validations.length >= 10);
    for (const v of policy.spec.validations) {
      assert.equal(v.reason, 'Forbidden');
      assert.match(v.messageExpression, /chart value/);
    }
  });

  it('one binding for the sandbox namespaces; each has its parameters in the policy, looked up by namespace', () => {
    const r = render(['sandboxNamespaces={sandboxes,team-b}']);
    const b = r.find('ValidatingAdmissionPolicyBinding', POLICY);
    assert.deepEqual(b.spec, {
      policyName: POLICY,
      validationActions: ['Deny'],
      matchResources: {
        namespaceSelector: {
          matchExpressions: [
            { key: 'kubernetes.io/metadata.name', operator: 'In', values: ['sandboxes', 'team-b'] },
          ],
        },
      },
    });
    const v = r.find('ValidatingAdmissionPolicy', POLICY).spec.variables.find((x) => x.name === 'params');
    assert.match(v.expression, /^\{.*\}\[request\.namespace\]$/s);
    assert.deepEqual(Object.keys(JSON.parse(v.expression.replace(/\[request\.namespace\]$/, ''))), [
      'sandboxes',
      'team-b',
    ]);
    assert.equal(r.find('ConfigMap', 'rel-sandbox-platform-policy-sandboxes'), undefined);
  });

  it('values reach the CEL as JSON string literals (valid CEL), and the schema keeps tolerations to label syntax', () => {
    const data = params(
      renderWith({ policy: { images: ['registry.example.com/a-b/c_d:1.0'] } }),
      'sandboxes',
    ).data;
    assert.equal(
      data.images,
      'localhost/sandbox-platform/sandbox-agent:dev,registry.example.com/a-b/c_d:1.0',
    );
    const quote = templateWith({ policy: { tolerations: [{ key: 'a"b', operator: 'Exists' }] } });
    assert.notEqual(quote.status, 0);
    assert.match(quote.stderr, /tolerations\/0\/key/);
  });

  it('the defaults: the default image only, gvisor, no scheduling fields, 4 CPU and 8Gi, default pools allowed', () => {
    assert.deepEqual(params(render(), 'sandboxes').data, {
      images: 'localhost/sandbox-platform/sandbox-agent:dev',
      runtimeClasses: 'gvisor',
      defaultRuntimeClass: 'gvisor',
      nodeSelectors: '',
      tolerations: '',
      maxCpu: '4',
      maxMemory: '8Gi',
      namespaceDefaultPools: 'true',
    });
  });

  it('a namespace override replaces the global value there, the other namespaces keep it', () => {
    const r = renderWith({
      sandboxNamespaces: ['sandboxes', 'team-b'],
      policy: {
        images: ['registry.example.com/base/*'],
        tolerations: [
          { key: 'dedicated', value: 'sandbox', effect: 'NoSchedule' },
          { key: 'gpu', operator: 'Exists' },
        ],
        namespaces: {
          'team-b': {
            images: [],
            runtimeClasses: ['gvisor', 'runc'],
            nodeSelectors: ['pool=b', 'zone=*'],
            maxCpu: 2,
          },
        },
      },
    });
    assert.deepEqual(params(r, 'sandboxes').data, {
      images: 'localhost/sandbox-platform/sandbox-agent:dev,registry.example.com/base/*',
      runtimeClasses: 'gvisor',
      defaultRuntimeClass: 'gvisor',
      nodeSelectors: '',
      tolerations: 'dedicated|Equal|sandbox|NoSchedule,gpu|Exists||*',
      maxCpu: '4',
      maxMemory: '8Gi',
      namespaceDefaultPools: 'true',
    });
    assert.deepEqual(params(r, 'team-b').data, {
      images: 'localhost/sandbox-platform/sandbox-agent:dev',
      runtimeClasses: 'gvisor,runc',
      defaultRuntimeClass: 'gvisor',
      nodeSelectors: 'pool=b,zone=*',
      tolerations: 'dedicated|Equal|sandbox|NoSchedule,gpu|Exists||*',
      maxCpu: '2',
      maxMemory: '8Gi',
      namespaceDefaultPools: 'true',
    });
  });

  it('refuses an image entry the gateway refused (a * that is not a whole last segment), naming it', () => {
    for (const entry of [
      'registry/sandbox*',
      '*',
      'registry/*/x',
      'registry/team/*/*',
      'Upper/Case',
      'a//b',
    ]) {
      const res = templateWith({ policy: { images: [entry] } });
      assert.notEqual(res.status, 0, entry);
      assert.match(res.stderr, /is not an image allowlist entry/, entry);
    }
    for (const entry of [
      'registry.example.com/team/*',
      'python:3.12',
      `ghcr.io/o/p@sha256:${'a'.repeat(64)}`,
    ]) {
      assert.equal(templateWith({ policy: { images: [entry] } }).status, 0, entry);
    }
  });

  it('refuses overrides of a namespace that is not served, and the removed gateway.policy.imageAllowlist', () => {
    const res = templateWith({ policy: { namespaces: { elsewhere: { maxCpu: 1 } } } });
    assert.match(res.stderr, /policy.namespaces: namespace "elsewhere" is not in sandboxNamespaces/);
    const old = template(['gateway.policy.imageAllowlist={python:3.12}']);
    assert.notEqual(old.status, 0);
    assert.match(old.stderr, /move the entries to policy.images/);
    assert.notEqual(template(['policy.nodeSelectors={nokey}']).status, 0, 'the schema checks key=value');
  });

  it('off with policy.enabled=false; the gateway no longer reads an image allowlist either way', () => {
    const r = render(['policy.enabled=false']);
    assert.equal(r.find('ValidatingAdmissionPolicy', POLICY), undefined);
    assert.equal(params(r, 'sandboxes'), undefined);
    assert.equal('GATEWAY_IMAGE_ALLOWLIST' in env(render().find('Deployment', GATEWAY)), false);
  });
});

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
    ]);
  });

  it('the sandbox side matches: what the gateway may send, sandbox Pods admit from the gateway', () => {
    const r = render(['gateway.ports.allowed.min=3000', 'gateway.ports.allowed.max=9000']);
    const out = egress(r).spec.egress[0].ports;
    const inn = r.find('NetworkPolicy', 'sandbox-ingress-from-gateway').spec.ingress[0].ports;
    assert.deepEqual(out, inn);
  });

  it('the trace receiver while tracing is on: its port, at its address when it is an IPv4 literal', () => {
    const rule = (sets) => egress(render(sets)).spec.egress[3];
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
