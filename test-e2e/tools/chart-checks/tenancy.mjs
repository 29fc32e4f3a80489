// Rendered-chart checks of the tenant boundary (issue 25; docs/adr/0028-policy-at-admission.md):
// the aggregated tenant ClusterRoles and the sandbox policy (one ValidatingAdmissionPolicy with the
// parameters of each sandbox namespace rendered into it, and its binding); the gateway's and the
// operator's side: gateway.mjs. Imported by chart-checks.test.mjs (the file `make chart-lint`
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
        resources: ['sandboxsessions', 'sandboxpools', 'sandboxsnapshots'],
        verbs: ['get', 'list', 'watch'],
      },
    ]);
    assert.deepEqual(edit.rules, [
      {
        apiGroups: ['sandbox.dev'],
        resources: ['sandboxsessions', 'sandboxpools', 'sandboxsnapshots'],
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

  it('the defaults: the default image and the Python image, gvisor, no scheduling fields, 4 CPU and 8Gi, default pools allowed', () => {
    assert.deepEqual(params(render(), 'sandboxes').data, {
      images: 'localhost/sandbox-platform/sandbox-agent:dev,localhost/sandbox-platform/sandbox-python',
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
