/**
 * The chart's sandbox policy (templates/sandbox-policy.yaml, docs/adr/0028-policy-at-admission.md)
 * on a real API server: the ValidatingAdmissionPolicy, the per-namespace parameter ConfigMaps and
 * bindings are rendered by the pinned helm (`make tools`) exactly as installed, and applied; then
 * SandboxSessions and SandboxPools (namespace default or not) are created as any client would.
 * Allowed specs pass; each forbidden image, runtime class, node selector, toleration and resource
 * bound is refused with HTTP 403 and the rule's message (the field, the value, the chart value
 * that decides, what is allowed). The image cases are the gateway's former allowlist table
 * (api-gateway's sessions/image-allowlist.ts, removed): the same semantics, now in CEL.
 *
 * Three sandbox namespaces: `strict` (the chart's defaults: the default image only, gvisor, no
 * scheduling fields, 4 CPU / 8Gi), `open` (per-namespace overrides: more images, runc, a node
 * label and two tolerations, 2 CPU / 4Gi) and `nodefault` (no namespace default pools).
 */
import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { API_VERSION, GROUP, KIND, PLURAL, POOL_KIND, POOL_PLURAL, VERSION } from '@sandbox-platform/api';

import {
  createTestNamespace,
  kubeClients,
  kubectl,
  predicate,
  waitFor,
  type TestNamespace,
} from '../../../src/framework/index.js';
import { renderChart, renderKey } from './chart-render.js';

const RELEASE = 'it-policy';
const POLICY = `${RELEASE}-sandbox-platform-sandbox-policy`;
const DEFAULT_IMAGE = 'localhost/sandbox-platform/sandbox-agent:dev';
const A64 = 'sha256:' + 'a'.repeat(64);
const B64 = 'sha256:' + 'b'.repeat(64);
/** The gateway's reading of an admission refusal (api-gateway/src/sessions/kube-errors.ts). */
const POLICY_DENIAL = /ValidatingAdmissionPolicy '([^']+)' with binding '([^']+)' denied request: ([\s\S]+)$/;

type Spec = Record<string, unknown>;
type Outcome = { allowed: true } | { allowed: false; status: number; message: string };

const { core, custom } = kubeClients();
let rel: TestNamespace;
let strict: TestNamespace;
let open: TestNamespace;
let nodefault: TestNamespace;
let seq = 0;

/** The body of a session with this spec, or of a pool with it as template. */
function body(kind: 'session' | 'pool', ns: string, spec: Spec, namespaceDefault = false): object {
  const name = `${kind}-${++seq}`;
  if (kind === 'session')
    return { apiVersion: API_VERSION, kind: KIND, metadata: { name, namespace: ns }, spec };
  return {
    apiVersion: API_VERSION,
    kind: POOL_KIND,
    metadata: { name, namespace: ns },
    spec: { replicas: 0, namespaceDefault, template: spec },
  };
}

/** Creates the object (a server-side dry run unless `persist`): what admission answered. */
async function admit(
  kind: 'session' | 'pool',
  ns: string,
  spec: Spec,
  opts: { namespaceDefault?: boolean; persist?: boolean } = {},
): Promise<Outcome> {
  try {
    await custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: ns,
      plural: kind === 'session' ? PLURAL : POOL_PLURAL,
      body: body(kind, ns, spec, opts.namespaceDefault),
      ...(opts.persist ? {} : { dryRun: 'All' }),
    });
    return { allowed: true };
  } catch (err) {
    if (!(err instanceof k8s.ApiException)) throw err;
    const status = (JSON.parse(String(err.body)) as { message?: string }).message ?? '';
    return { allowed: false, status: err.code, message: status };
  }
}

/** The policy's own message of a refusal (what follows "denied request: "), failing when admitted. */
function refusal(o: Outcome): { status: number; rule: string; full: string } {
  if (o.allowed) throw new Error('admitted, expected a refusal');
  return { status: o.status, rule: POLICY_DENIAL.exec(o.message)?.[3] ?? '', full: o.message };
}

const values = (): Record<string, unknown> => ({
  sandboxNamespaces: [strict.name, open.name, nodefault.name],
  apiKeys: renderKey(strict.name),
  policy: {
    namespaces: {
      [open.name]: {
        images: [
          'registry.example.com/sandbox',
          'registry.example.com/team/*',
          'localhost:5000/tools/python:3.12',
          `ghcr.io/org/pinned@${A64}`,
        ],
        runtimeClasses: ['gvisor', 'runc'],
        nodeSelectors: ['pool=sandbox', 'topology.kubernetes.io/zone=*'],
        tolerations: [
          { key: 'sandbox.dev/dedicated', value: 'sandboxes', effect: 'NoSchedule' },
          { key: 'gpu', operator: 'Exists' },
        ],
        maxCpu: '2',
        maxMemory: '4Gi',
      },
      [nodefault.name]: { namespaceDefaultPools: false },
    },
  },
});

beforeAll(async () => {
  const ns = (prefix: string): Promise<TestNamespace> => createTestNamespace(core, { prefix });
  [rel, strict, open, nodefault] = await Promise.all([
    ns('policy-rel'),
    ns('strict'),
    ns('open'),
    ns('nodefault'),
  ]);
  const manifest = renderChart({
    release: RELEASE,
    namespace: rel.name,
    values: values(),
    showOnly: ['templates/sandbox-policy.yaml'],
  });
  const applied = await kubectl(['apply', '-f', '-'], { input: manifest });
  expect({ status: applied.status, stderr: applied.stderr }).toEqual({ status: 0, stderr: '' });
  // The API server compiles the policy and syncs bindings and params within moments: wait until
  // every namespace refuses what its policy forbids.
  for (const ns of [strict, open, nodefault]) {
    await waitFor(
      () => admit('session', ns.name, { image: 'evil.io/x:1' }),
      predicate(`policy in force in ${ns.name}`, (o) => !o.allowed && o.message.includes(POLICY)),
      { timeoutMs: 30_000, intervalMs: 250 },
    );
  }
});

afterAll(async () => {
  const bindings = [strict, open, nodefault].filter(Boolean).map((ns) => `${POLICY}-${ns.name}`);
  await kubectl(['delete', '--ignore-not-found', 'validatingadmissionpolicybinding', ...bindings]);
  await kubectl(['delete', '--ignore-not-found', 'validatingadmissionpolicy', POLICY]);
  await Promise.all([rel, strict, open, nodefault].map((ns) => ns?.cleanup()));
});

describe('images: the gateway allowlist semantics (whole path segments, never text prefixes)', () => {
  it.each([
    ['registry.example.com/sandbox', true],
    ['registry.example.com/sandbox:1.0', true],
    [`registry.example.com/sandbox@${B64}`, true],
    ['registry.example.com/sandboxevil', false],
    ['registry.example.com/sandbox-evil:1.0', false],
    ['registry.example.com/sandbox/nested', false],
    ['registry.example.com/team/a', true],
    ['registry.example.com/team/a/b:c', true],
    [`registry.example.com/team/a:1@${B64}`, true],
    ['registry.example.com/team', false],
    ['registry.example.com/teamevil/a', false],
    ['registry.example.com/team/../evil', false],
    ['Registry.example.com/team/a', false],
    ['localhost:5000/tools/python:3.12', true],
    ['localhost:5000/tools/python:3.12-slim', false],
    ['localhost:5000/tools/python', false],
    [`ghcr.io/org/pinned@${A64}`, true],
    ['ghcr.io/org/pinned:latest', false],
    [`ghcr.io/org/pinned:latest@${A64}`, false],
    ['REGISTRY.example.com/team/A', false],
    ['registry.example.com/team/a b', false],
    ['registry.example.com/team/a@sha256:abc', false],
    [DEFAULT_IMAGE, true],
    ['localhost/sandbox-platform/sandbox-agent:other', false],
  ])('%s -> %s', async (image, allowed) => {
    const o = await admit('session', open.name, { image });
    expect(o.allowed).toBe(allowed);
    if (!o.allowed) {
      expect(o.status).toBe(403);
      expect(refusal(o).rule).toContain(`spec.image ${image}`);
      expect(refusal(o).rule).toContain(`policy.namespaces.${open.name}.images`);
    }
  });

  it('names an image that is no valid reference as such', async () => {
    const r = refusal(await admit('session', open.name, { image: 'registry.example.com/team/A' }));
    expect(r.rule).toContain('(not a valid image reference');
  });

  it('the chart defaults allow the default image only, and say so', async () => {
    expect(await admit('session', strict.name, { image: DEFAULT_IMAGE })).toEqual({ allowed: true });
    const r = refusal(await admit('session', strict.name, { image: 'evil.io/x:1' }));
    expect(r.status).toBe(403);
    expect(r.rule).toBe(
      `spec.image evil.io/x:1 is not allowed in namespace ${strict.name} by the platform's image policy ` +
        `(chart value policy.images / policy.namespaces.${strict.name}.images, Helm release ${RELEASE} in ${rel.name}); ` +
        `allowed: ${DEFAULT_IMAGE} (an entry without tag allows any tag of that repository, path/* any repository ` +
        'below path). Leave spec.image unset for the default image, or ask the platform team to allow this one.',
    );
    expect(r.full).toMatch(
      new RegExp(`ValidatingAdmissionPolicy '${POLICY}' with binding '${POLICY}-${strict.name}'`),
    );
  });
});

describe('as kubectl shows it', () => {
  it('kubectl apply of a session asking for runc is Forbidden, naming the rule and the fix', async () => {
    const manifest = JSON.stringify(body('session', strict.name, { runtimeClassName: 'runc' }));
    const res = await kubectl(['apply', '-f', '-'], { input: manifest });
    expect(res.status).not.toBe(0);
    expect(res.stderr).toContain('Error from server (Forbidden)');
    expect(res.stderr).toContain(
      `denied request: spec.runtimeClassName runc is not allowed in namespace ${strict.name} by the platform's runtime policy ` +
        `(chart value policy.runtimeClasses / policy.namespaces.${strict.name}.runtimeClasses, Helm release ${RELEASE} in ${rel.name}); ` +
        'allowed: gvisor. Leave spec.runtimeClassName unset to run under the platform default (gvisor).',
    );
    console.log(`refusal as kubectl shows it:\n${res.stderr}`);
  });
});

/** A forbidden spec in the strict namespace, and what its refusal must say (after the field prefix). */
const STRICT_FORBIDDEN: Array<[string, Spec, string]> = [
  ['an image off the allowlist', { image: 'evil.io/x:1' }, '.image evil.io/x:1 is not allowed'],
  ['the runc runtime class', { runtimeClassName: 'runc' }, '.runtimeClassName runc is not allowed'],
  [
    'a node selector',
    { nodeSelector: { 'kubernetes.io/hostname': 'pinned' } },
    '.nodeSelector kubernetes.io/hostname=pinned is not allowed',
  ],
  [
    'a toleration',
    {
      tolerations: [
        { key: 'node-role.kubernetes.io/control-plane', operator: 'Exists', effect: 'NoSchedule' },
      ],
    },
    '.tolerations {key: node-role.kubernetes.io/control-plane, operator: Exists, effect: NoSchedule} is not allowed',
  ],
  [
    'a CPU request above the bound',
    { resources: { requests: { cpu: 8 } } },
    `.resources.requests.cpu 8 is above the most one sandbox may take in namespace`,
  ],
  [
    'a memory limit above the bound',
    { resources: { limits: { memory: '9Gi' } } },
    `.resources.limits.memory 9Gi is above the most one sandbox may take in namespace`,
  ],
];

describe.each([
  ['a session', 'session', false, 'spec'],
  ['a pool', 'pool', false, 'spec.template'],
  ['a namespace default pool', 'pool', true, 'spec.template'],
] as const)('%s in the strict namespace', (_what, kind, namespaceDefault, field) => {
  it.each(STRICT_FORBIDDEN)('refuses %s with 403 and the rule', async (_rule, spec, says) => {
    const r = refusal(await admit(kind, strict.name, spec, { namespaceDefault }));
    expect(r.status).toBe(403);
    expect(r.rule).toContain(`${field}${says}`);
    expect(r.rule).toContain(strict.name);
    expect(r.rule).toMatch(/chart value policy\.\w+ \/ policy\.namespaces\./);
  });

  it.each([
    ['nothing', {}],
    ['the default image', { image: DEFAULT_IMAGE }],
    ['the default runtime class', { runtimeClassName: 'gvisor' }],
    [
      'resources at the bounds',
      { resources: { requests: { cpu: '4', memory: '8Gi' }, limits: { cpu: 4, memory: '8192Mi' } } },
    ],
  ])('admits %s', async (_what, spec) => {
    expect(await admit(kind, strict.name, spec, { namespaceDefault })).toEqual({ allowed: true });
  });
});

describe('per-namespace overrides (the open namespace)', () => {
  it.each([
    ['runc', { runtimeClassName: 'runc' }],
    [
      'an allowed label value and a label with any value',
      { nodeSelector: { pool: 'sandbox', 'topology.kubernetes.io/zone': 'eu-1' } },
    ],
    [
      'the allowed tolerations (an Exists entry without effect allows any effect)',
      {
        tolerations: [
          { key: 'sandbox.dev/dedicated', operator: 'Equal', value: 'sandboxes', effect: 'NoSchedule' },
          { key: 'gpu', operator: 'Exists' },
          { key: 'gpu', operator: 'Exists', effect: 'NoExecute' },
        ],
      },
    ],
    ['its own bounds', { resources: { limits: { cpu: '2', memory: '4Gi' } } }],
  ])('admits %s in a session and a pool', async (_what, spec) => {
    expect(await admit('session', open.name, spec)).toEqual({ allowed: true });
    expect(await admit('pool', open.name, spec)).toEqual({ allowed: true });
  });

  it.each([
    ['another value of a listed label', { nodeSelector: { pool: 'other' } }, '.nodeSelector pool=other'],
    [
      'a listed toleration with another effect',
      { tolerations: [{ key: 'sandbox.dev/dedicated', value: 'sandboxes', effect: 'NoExecute' }] },
      'effect: NoExecute}',
    ],
    [
      'a listed toleration without effect (it would tolerate every effect)',
      { tolerations: [{ key: 'sandbox.dev/dedicated', operator: 'Equal', value: 'sandboxes' }] },
      '{key: sandbox.dev/dedicated, operator: Equal, value: sandboxes} is not allowed',
    ],
    ['a toleration of every taint', { tolerations: [{ operator: 'Exists' }] }, '{key: , operator: Exists}'],
    [
      '3 CPUs (the global bound 4 does not apply here)',
      { resources: { limits: { cpu: '3' } } },
      'cpu 3 is above',
    ],
    ['an image allowed elsewhere only', { image: 'evil.io/x:1' }, '.image evil.io/x:1'],
  ])('refuses %s', async (_what, spec, says) => {
    const r = refusal(await admit('session', open.name, spec));
    expect(r.status).toBe(403);
    expect(r.rule).toContain(says);
  });

  it('lists what is allowed in the refusal', async () => {
    const r = refusal(await admit('session', open.name, { tolerations: [{ operator: 'Exists' }] }));
    expect(r.rule).toContain(
      'allowed: {key: sandbox.dev/dedicated, operator: Equal, value: sandboxes, effect: NoSchedule}, ' +
        '{key: gpu, operator: Exists, any effect}.',
    );
  });

  it('a namespace default pool may not name runc even where runc is allowed', async () => {
    expect(await admit('pool', open.name, { runtimeClassName: 'runc' })).toEqual({ allowed: true });
    const r = refusal(
      await admit('pool', open.name, { runtimeClassName: 'runc' }, { namespaceDefault: true }),
    );
    expect(r.status).toBe(403);
    expect(r.rule).toContain(
      'spec.template.runtimeClassName runc is not allowed for a namespace default pool',
    );
    expect(r.rule).toContain('instead of the platform default (gvisor');
  });
});

describe('policy.namespaceDefaultPools: false', () => {
  it('refuses a namespace default pool, admits a plain one', async () => {
    const r = refusal(await admit('pool', nodefault.name, {}, { namespaceDefault: true }));
    expect(r.rule).toContain(`spec.namespaceDefault: true is not allowed in namespace ${nodefault.name}`);
    expect(await admit('pool', nodefault.name, {})).toEqual({ allowed: true });
  });
});

describe('pools are checked when their Pod shape changes, not when they scale', () => {
  it('a pool admitted under an older policy still scales; a changed template meets the new policy', async () => {
    const name = 'scales';
    const pool = {
      apiVersion: API_VERSION,
      kind: POOL_KIND,
      metadata: { name, namespace: open.name },
      spec: { replicas: 0, template: { runtimeClassName: 'runc' } },
    };
    await custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: open.name,
      plural: POOL_PLURAL,
      body: pool,
    });
    // The platform team takes runc away from the namespace.
    const params = `${RELEASE}-sandbox-platform-policy-${open.name}`;
    const patched = await kubectl([
      'patch',
      'configmap',
      params,
      '-n',
      rel.name,
      '--type=merge',
      '-p',
      '{"data":{"runtimeClasses":"gvisor"}}',
    ]);
    expect(patched.status).toBe(0);
    await waitFor(
      () => admit('session', open.name, { runtimeClassName: 'runc' }),
      predicate('runc refused in the open namespace', (o) => !o.allowed),
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    const patch = (p: object): Promise<{ status: number | null; stderr: string }> =>
      kubectl(['patch', 'sandboxpool', name, '-n', open.name, '--type=merge', '-p', JSON.stringify(p)]);
    expect(await patch({ spec: { replicas: 2 } })).toMatchObject({ status: 0 });
    const changed = await patch({ spec: { template: { env: [{ name: 'A', value: '1' }] } } });
    expect(changed.status).not.toBe(0);
    expect(changed.stderr).toContain('spec.template.runtimeClassName runc is not allowed');
  });
});

describe('fails closed', () => {
  it('without its parameter ConfigMap a namespace admits nothing', async () => {
    const params = `${RELEASE}-sandbox-platform-policy-${nodefault.name}`;
    expect((await kubectl(['delete', 'configmap', params, '-n', rel.name])).status).toBe(0);
    const o = await waitFor(
      () => admit('session', nodefault.name, {}),
      predicate('a plain session refused', (x) => !x.allowed),
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    expect(refusal(o).full).toContain(POLICY);
  });
});
