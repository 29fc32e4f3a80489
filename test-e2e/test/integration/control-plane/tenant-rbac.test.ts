/**
 * The chart's tenant RBAC (templates/tenant-rbac.yaml) on a real API server and controller manager:
 * its aggregated ClusterRoles extend the built-in `view`, `edit` and `admin`, so a user with a
 * RoleBinding of the built-in `edit` in a namespace (what docs/tenants.md tells a platform team to
 * create) may create, change and delete SandboxSessions and SandboxPools there, and never write
 * their status (which decides where the gateway dials, issue 25) or finalizers; `view` only reads.
 * Asked of the API server's authorizer with SubjectAccessReviews.
 */
import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import {
  createTestNamespace,
  kubeClients,
  kubectl,
  predicate,
  waitFor,
  type TestNamespace,
} from '../../../src/framework/index.js';
import { renderChart, renderKey } from './chart-render.js';

const RELEASE = 'it-tenant';
const ROLES = [`${RELEASE}-sandbox-platform-tenant-view`, `${RELEASE}-sandbox-platform-tenant-edit`];
const WRITE = ['create', 'update', 'patch', 'delete', 'deletecollection'];
const READ = ['get', 'list', 'watch'];

const { kc, core } = kubeClients();
const authz = kc.makeApiClient(k8s.AuthorizationV1Api);
const rbac = kc.makeApiClient(k8s.RbacAuthorizationV1Api);
let ns: TestNamespace;

/** Whether `user` (authenticated, no other group) may do `verb` on the resource in the namespace. */
async function may(user: string, verb: string, resource: string, subresource = ''): Promise<boolean> {
  const review = await authz.createSubjectAccessReview({
    body: {
      spec: {
        user,
        groups: ['system:authenticated'],
        resourceAttributes: { namespace: ns.name, group: 'sandbox.dev', resource, subresource, verb },
      },
    },
  });
  return review.status?.allowed === true;
}

beforeAll(async () => {
  ns = await createTestNamespace(core, { prefix: 'tenant' });
  const manifest = renderChart({
    release: RELEASE,
    namespace: 'sandbox-system',
    values: { sandboxNamespaces: [ns.name], apiKeys: renderKey(ns.name) },
    showOnly: ['templates/tenant-rbac.yaml'],
  });
  const applied = await kubectl(['apply', '-f', '-'], { input: manifest });
  expect({ status: applied.status, stderr: applied.stderr }).toEqual({ status: 0, stderr: '' });
  for (const role of ['view', 'edit', 'admin']) {
    await rbac.createNamespacedRoleBinding({
      namespace: ns.name,
      body: {
        metadata: { name: `tenant-${role}` },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: `tenant-${role}` }],
      },
    });
  }
  // The controller manager's clusterrole-aggregation controller copies the rules into the
  // built-in roles within moments.
  await waitFor(
    () => may('tenant-edit', 'create', 'sandboxpools'),
    predicate('edit aggregated', (allowed) => allowed),
    { timeoutMs: 30_000, intervalMs: 250 },
  );
});

afterAll(async () => {
  await kubectl(['delete', '--ignore-not-found', 'clusterrole', ...ROLES]);
  await ns?.cleanup();
});

describe.each(['sandboxsessions', 'sandboxpools'])('%s', (resource) => {
  it.each(['edit', 'admin'])('the built-in %s may read and write them', async (role) => {
    for (const verb of [...READ, ...WRITE])
      expect([verb, await may(`tenant-${role}`, verb, resource)]).toEqual([verb, true]);
  });

  it('the built-in view may only read them', async () => {
    for (const verb of READ) expect([verb, await may('tenant-view', verb, resource)]).toEqual([verb, true]);
    for (const verb of WRITE) expect([verb, await may('tenant-view', verb, resource)]).toEqual([verb, false]);
  });

  it.each(['view', 'edit', 'admin'])(
    'the built-in %s may never write their status or finalizers',
    async (role) => {
      for (const sub of ['status', 'finalizers']) {
        for (const verb of ['update', 'patch']) {
          expect([sub, verb, await may(`tenant-${role}`, verb, resource, sub)]).toEqual([sub, verb, false]);
        }
      }
    },
  );

  it('a user without a binding may do nothing', async () => {
    for (const verb of [...READ, ...WRITE]) expect(await may('stranger', verb, resource)).toBe(false);
  });
});
