/**
 * e2e: what the Helm chart installed. The RBAC is least-privilege (asked of the API server's own
 * authorizer with SubjectAccessReviews, so the answer is the real one) and the NetworkPolicies
 * in the sandbox namespaces say what they should: ingress only from gateway pods on the agent
 * port, egress only DNS to the cluster DNS pods (test-e2e/specs/isolation proves they are enforced).
 *
 * Needs the chart installed (`make platform-up`); E2E_PLATFORM_NAMESPACE / E2E_PLATFORM_RELEASE
 * name the release (defaults sandbox-system / sandbox), E2E_NAMESPACE a sandbox namespace.
 */
import { describe, expect, it } from '@jest/globals';

import * as k8s from '@kubernetes/client-node';
import { AGENT_PORT, GROUP, LABELS, MANAGER_NAME, PLURAL, SANDBOX_COMPONENT } from '@sandbox-platform/api';

import { loadKubeConfig } from '@sandbox-platform/test-support';

const PLATFORM_NS = process.env.E2E_PLATFORM_NAMESPACE ?? 'sandbox-system';
const RELEASE = process.env.E2E_PLATFORM_RELEASE ?? 'sandbox';
const SANDBOX_NS = process.env.E2E_NAMESPACE ?? 'sandbox-e2e';
const OPERATOR_SA = `system:serviceaccount:${PLATFORM_NS}:${RELEASE}-sandbox-platform-operator`;
const GATEWAY_SA = `system:serviceaccount:${PLATFORM_NS}:${RELEASE}-sandbox-platform-gateway`;
const LEASE = `${RELEASE}-sandbox-platform-operator`;

const kc = loadKubeConfig();
const authz = kc.makeApiClient(k8s.AuthorizationV1Api);
const net = kc.makeApiClient(k8s.NetworkingV1Api);

interface Access {
  verb: string;
  resource: string;
  group?: string;
  subresource?: string;
  namespace?: string;
  name?: string;
}

/** Asks the API server whether a service account may do something. */
async function can(user: string, a: Access): Promise<boolean> {
  const review = await authz.createSubjectAccessReview({
    body: {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      spec: {
        user,
        groups: ['system:serviceaccounts', `system:serviceaccounts:${PLATFORM_NS}`, 'system:authenticated'],
        resourceAttributes: {
          verb: a.verb,
          resource: a.resource,
          group: a.group ?? '',
          subresource: a.subresource,
          namespace: a.namespace,
          name: a.name,
        },
      },
    },
  });
  return review.status?.allowed === true;
}

const describeAccess = (a: Access): string =>
  `${a.verb} ${a.group ? a.group + '/' : ''}${a.resource}${a.subresource ? '/' + a.subresource : ''}` +
  (a.name ? ` ${a.name}` : '') +
  (a.namespace ? ` in ${a.namespace}` : ' cluster-wide');

describe('chart RBAC is least-privilege', () => {
  const sessions = { group: GROUP, resource: PLURAL };
  const cases: Array<[string, string, Access, boolean]> = [
    // The gateway: sessions yes, Secrets never, nothing outside the sandbox namespaces.
    ['gateway', GATEWAY_SA, { verb: 'create', ...sessions, namespace: SANDBOX_NS }, true],
    ['gateway', GATEWAY_SA, { verb: 'patch', ...sessions, namespace: SANDBOX_NS }, true],
    ['gateway', GATEWAY_SA, { verb: 'get', resource: 'secrets', namespace: SANDBOX_NS }, false],
    ['gateway', GATEWAY_SA, { verb: 'list', resource: 'secrets', namespace: SANDBOX_NS }, false],
    ['gateway', GATEWAY_SA, { verb: 'get', resource: 'secrets', namespace: PLATFORM_NS }, false],
    ['gateway', GATEWAY_SA, { verb: 'list', ...sessions }, false],
    ['gateway', GATEWAY_SA, { verb: 'create', ...sessions, namespace: 'default' }, false],
    [
      'gateway',
      GATEWAY_SA,
      { verb: 'patch', ...sessions, subresource: 'status', namespace: SANDBOX_NS },
      false,
    ],
    ['gateway', GATEWAY_SA, { verb: 'create', resource: 'pods', namespace: SANDBOX_NS }, false],
    // Pods are watched (read only) to check a session's Pod identity before dialing it (ADR 0031).
    ['gateway', GATEWAY_SA, { verb: 'watch', resource: 'pods', namespace: SANDBOX_NS }, true],
    ['gateway', GATEWAY_SA, { verb: 'delete', resource: 'pods', namespace: SANDBOX_NS }, false],
    ['gateway', GATEWAY_SA, { verb: 'patch', resource: 'pods', namespace: SANDBOX_NS }, false],
    // KubernetesExec is enabled by `make platform-up`: a WebSocket exec needs both verbs.
    [
      'gateway',
      GATEWAY_SA,
      { verb: 'create', resource: 'pods', subresource: 'exec', namespace: SANDBOX_NS },
      true,
    ],
    [
      'gateway',
      GATEWAY_SA,
      { verb: 'get', resource: 'pods', subresource: 'exec', namespace: SANDBOX_NS },
      true,
    ],
    [
      'gateway',
      GATEWAY_SA,
      { verb: 'create', resource: 'pods', subresource: 'exec', namespace: PLATFORM_NS },
      false,
    ],
    // The operator: children and status yes, exec never, no spec writes, nothing cluster-wide.
    [
      'operator',
      OPERATOR_SA,
      { verb: 'create', resource: 'pods', subresource: 'exec', namespace: SANDBOX_NS },
      false,
    ],
    [
      'operator',
      OPERATOR_SA,
      { verb: 'get', resource: 'pods', subresource: 'exec', namespace: SANDBOX_NS },
      false,
    ],
    ['operator', OPERATOR_SA, { verb: 'create', resource: 'pods', namespace: SANDBOX_NS }, true],
    ['operator', OPERATOR_SA, { verb: 'create', resource: 'secrets', namespace: SANDBOX_NS }, true],
    [
      'operator',
      OPERATOR_SA,
      { verb: 'patch', ...sessions, subresource: 'status', namespace: SANDBOX_NS },
      true,
    ],
    ['operator', OPERATOR_SA, { verb: 'update', ...sessions, namespace: SANDBOX_NS }, false],
    // Persistent workspaces and suspension (docs/adr/0015): spec.suspend by merge patch, the claims,
    // and one cluster-scoped read of StorageClasses by name (never a list).
    ['operator', OPERATOR_SA, { verb: 'patch', ...sessions, namespace: SANDBOX_NS }, true],
    [
      'operator',
      OPERATOR_SA,
      { verb: 'create', resource: 'persistentvolumeclaims', namespace: SANDBOX_NS },
      true,
    ],
    [
      'operator',
      OPERATOR_SA,
      { verb: 'create', resource: 'persistentvolumeclaims', namespace: PLATFORM_NS },
      false,
    ],
    ['operator', OPERATOR_SA, { verb: 'get', group: 'storage.k8s.io', resource: 'storageclasses' }, true],
    ['operator', OPERATOR_SA, { verb: 'list', group: 'storage.k8s.io', resource: 'storageclasses' }, false],
    ['operator', OPERATOR_SA, { verb: 'create', resource: 'persistentvolumes' }, false],
    ['operator', OPERATOR_SA, { verb: 'get', resource: 'secrets', namespace: PLATFORM_NS }, false],
    ['operator', OPERATOR_SA, { verb: 'list', resource: 'secrets' }, false],
    ['operator', OPERATOR_SA, { verb: 'create', resource: 'pods', namespace: 'default' }, false],
    // The leader Lease: the release's own, by name, and no other.
    [
      'operator',
      OPERATOR_SA,
      {
        verb: 'update',
        group: 'coordination.k8s.io',
        resource: 'leases',
        namespace: PLATFORM_NS,
        name: LEASE,
      },
      true,
    ],
    [
      'operator',
      OPERATOR_SA,
      {
        verb: 'update',
        group: 'coordination.k8s.io',
        resource: 'leases',
        namespace: PLATFORM_NS,
        name: 'other',
      },
      false,
    ],
  ];

  it.each(cases)('%s: %#', async (_who, user, access, expected) => {
    const allowed = await can(user, access);
    expect({ access: describeAccess(access), allowed }).toEqual({
      access: describeAccess(access),
      allowed: expected,
    });
  });
});

describe('chart NetworkPolicies for sandbox pods', () => {
  const sandboxSelector = { [LABELS.component]: SANDBOX_COMPONENT, [LABELS.managedBy]: MANAGER_NAME };

  it('admits ingress only from gateway pods of the release namespace, on the agent port and the proxied port range', async () => {
    const np = await net.readNamespacedNetworkPolicy({
      name: 'sandbox-ingress-from-gateway',
      namespace: SANDBOX_NS,
    });
    expect(np.spec?.podSelector?.matchLabels).toEqual(sandboxSelector);
    expect(np.spec?.policyTypes).toEqual(['Ingress']);
    expect(np.spec?.ingress).toEqual([
      {
        _from: [
          {
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': PLATFORM_NS } },
            podSelector: { matchLabels: { 'sandbox.dev/gateway': 'true' } },
          },
        ],
        // The port route's range (gateway.ports.allowed, default 1024-65535).
        ports: [
          { protocol: 'TCP', port: AGENT_PORT },
          { protocol: 'TCP', port: 1024, endPort: 65535 },
        ],
      },
    ]);
  });

  it('denies egress except the egress proxy (its port only) and DNS to the cluster DNS pods', async () => {
    const np = await net.readNamespacedNetworkPolicy({ name: 'sandbox-egress', namespace: SANDBOX_NS });
    expect(np.spec?.podSelector?.matchLabels).toEqual(sandboxSelector);
    expect(np.spec?.policyTypes).toEqual(['Egress']);
    expect(np.spec?.egress).toEqual([
      {
        // egressProxy.enabled (default): the one way out by host name (ADR 0034).
        to: [
          {
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': PLATFORM_NS } },
            podSelector: {
              matchLabels: {
                'app.kubernetes.io/name': 'sandbox-platform',
                'app.kubernetes.io/instance': RELEASE,
                'app.kubernetes.io/component': 'egress-proxy',
              },
            },
          },
        ],
        // egressProxy.dns.enabled (default): the proxy is the sandboxes' only name server, so
        // there is no rule to the cluster DNS pods.
        ports: [
          { protocol: 'TCP', port: 3128 },
          { protocol: 'UDP', port: 5353 },
          { protocol: 'TCP', port: 5353 },
        ],
      },
    ]);
  });

  it('labels the sandbox namespace for Pod Security restricted', async () => {
    const ns = await kc.makeApiClient(k8s.CoreV1Api).readNamespace({ name: SANDBOX_NS });
    expect(ns.metadata?.labels?.['pod-security.kubernetes.io/enforce']).toBe('restricted');
  });
});
