/**
 * The chart's egress policy (templates/egress-policy.yaml, docs/adr/0034) on a real API server,
 * rendered by the pinned helm as installed: which hosts spec.egress may name per namespace
 * (egressProxy.allowedHosts, per namespace egressProxy.namespaces.<ns>.allowedHosts), on create
 * and on every update that changes spec.egress; an update of anything else is not judged.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { API_VERSION, GROUP, KIND, PLURAL, VERSION } from '@sandbox-platform/api';

import {
  createTestNamespace,
  kubeClients,
  kubectl,
  predicate,
  waitFor,
  type TestNamespace,
} from '../../../src/framework/index.js';
import { renderChart, renderKey } from './chart-render.js';

const { custom, core } = kubeClients();
const RELEASE = 'it-egress';
let rel: TestNamespace;
let strict: TestNamespace;
let open: TestNamespace;
let seq = 0;

type Outcome = { allowed: true } | { allowed: false; status: number; message: string };
const rules = (...hosts: string[]): object => ({ rules: hosts.map((host) => ({ host })) });

async function create(ns: string, egress: object, dryRun = true): Promise<Outcome & { name: string }> {
  const name = `s-${++seq}`;
  try {
    await custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: ns,
      plural: PLURAL,
      body: { apiVersion: API_VERSION, kind: KIND, metadata: { name, namespace: ns }, spec: { egress } },
      ...(dryRun ? { dryRun: 'All' } : {}),
    });
    return { allowed: true, name };
  } catch (err) {
    if (!(err instanceof k8s.ApiException)) throw err;
    return {
      allowed: false,
      name,
      status: err.code,
      message: (JSON.parse(String(err.body)) as { message: string }).message,
    };
  }
}

async function patch(ns: string, name: string, body: object): Promise<Outcome> {
  try {
    await custom.patchNamespacedCustomObject(
      { group: GROUP, version: VERSION, namespace: ns, plural: PLURAL, name, body },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    return { allowed: true };
  } catch (err) {
    if (!(err instanceof k8s.ApiException)) throw err;
    return {
      allowed: false,
      status: err.code,
      message: (JSON.parse(String(err.body)) as { message: string }).message,
    };
  }
}

beforeAll(async () => {
  [rel, strict, open] = await Promise.all([
    createTestNamespace(core, { prefix: 'egress-rel' }),
    createTestNamespace(core, { prefix: 'egress-strict' }),
    createTestNamespace(core, { prefix: 'egress-open' }),
  ]);
  const manifest = renderChart({
    release: RELEASE,
    namespace: rel!.name,
    values: {
      sandboxNamespaces: [strict!.name, open!.name],
      apiKeys: renderKey(strict!.name),
      egressProxy: {
        allowedHosts: ['*.pypi.org', 'github.com'],
        namespaces: { [open!.name]: { allowedHosts: ['*'] } },
      },
    },
    showOnly: ['templates/egress-policy.yaml'],
  });
  const applied = await kubectl(['apply', '-f', '-'], { input: manifest });
  expect({ status: applied.status, stderr: applied.stderr }).toEqual({ status: 0, stderr: '' });
  await waitFor(
    () => create(strict.name, rules('evil.example')),
    predicate('egress policy in force', (o: Outcome) => !o.allowed && o.message.includes('egress policy')),
    { timeoutMs: 30_000, intervalMs: 250 },
  );
}, 120_000);

afterAll(async () => {
  await kubectl([
    'delete',
    '--ignore-not-found',
    'validatingadmissionpolicybinding',
    `${RELEASE}-sandbox-platform-egress-policy`,
  ]);
  await kubectl([
    'delete',
    '--ignore-not-found',
    'validatingadmissionpolicy',
    `${RELEASE}-sandbox-platform-egress-policy`,
  ]);
  await Promise.all([rel, strict, open].map((n) => n?.cleanup()));
});

describe('egress hosts at admission', () => {
  it('admits hosts the namespace allows (exact, below a wildcard, a wildcard below a wildcard)', async () => {
    expect(
      await create(strict.name, rules('github.com', 'files.pypi.org', '*.files.pypi.org')),
    ).toMatchObject({ allowed: true });
  });

  it('refuses other hosts with 403 naming them, the chart value and what is allowed', async () => {
    const r = await create(strict.name, rules('github.com', 'evil.example', '*.org', 'pypi.org'));
    expect(r).toMatchObject({ allowed: false, status: 403 });
    expect((r as { message: string }).message).toContain(
      `spec.egress.rules host evil.example, *.org, pypi.org is not allowed in namespace ${strict.name} by the platform's egress policy ` +
        `(chart value egressProxy.allowedHosts / egressProxy.namespaces.${strict.name}.allowedHosts, Helm release ${RELEASE} in ${rel.name}); ` +
        'allowed: *.pypi.org, github.com.',
    );
  });

  it('a namespace override applies to its namespace only', async () => {
    expect(await create(open.name, rules('evil.example'))).toMatchObject({ allowed: true });
  });

  it('judges an update that changes spec.egress, and not one that changes something else', async () => {
    const made = await create(strict.name, rules('github.com'), false);
    expect(made).toMatchObject({ allowed: true });
    expect(await patch(strict.name, made.name, { spec: { egress: rules('evil.example') } })).toMatchObject({
      allowed: false,
      status: 403,
    });
    expect(
      await patch(strict.name, made.name, { spec: { egress: rules('github.com', 'files.pypi.org') } }),
    ).toMatchObject({ allowed: true });
    expect(
      await patch(strict.name, made.name, { metadata: { annotations: { touched: 'yes' } } }),
    ).toMatchObject({ allowed: true });
  });
});
