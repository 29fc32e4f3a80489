/**
 * The chart's sandbox policy (templates/sandbox-policy.yaml, docs/adr/0028-policy-at-admission.md)
 * on a real API server, rendered by the pinned helm exactly as installed (sandbox-policy-env.ts).
 * SandboxSessions and SandboxPools (namespace default or not) are created as any client would:
 * allowed specs pass; each forbidden image, runtime class, node selector, toleration and resource
 * bound is refused with HTTP 403 and the rule's message (the field, the value, the chart value
 * that decides, what is allowed); per-namespace overrides apply to their namespace only; pools are
 * checked when their template changes, not when they scale; a namespace without its parameters
 * admits nothing. The image rule's full table: sandbox-policy-images.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { API_VERSION, GROUP, POOL_KIND, POOL_PLURAL, VERSION } from '@sandbox-platform/api';

import { kubeClients, kubectl, predicate, waitFor } from '../../../src/framework/index.js';
import { DEFAULT_IMAGE, PolicyEnv, refusal, type Spec } from './sandbox-policy-env.js';

const { custom } = kubeClients();
let env: PolicyEnv;

beforeAll(async () => {
  env = await PolicyEnv.install('it-policy');
});

afterAll(async () => {
  await env?.uninstall();
});

describe('as kubectl shows it', () => {
  it('kubectl apply of a session asking for runc is Forbidden, naming the rule and the fix', async () => {
    const manifest = JSON.stringify(env.body('session', env.strict.name, { runtimeClassName: 'runc' }));
    const res = await kubectl(['apply', '-f', '-'], { input: manifest });
    expect(res.status).not.toBe(0);
    expect(res.stderr).toContain('Error from server (Forbidden)');
    expect(res.stderr).toContain(
      `denied request: spec.runtimeClassName runc is not allowed in namespace ${env.strict.name} by the platform's runtime policy ` +
        `(chart value policy.runtimeClasses / policy.namespaces.${env.strict.name}.runtimeClasses, Helm release ${env.release} in ${env.rel.name}); ` +
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
    const r = refusal(await env.admit(kind, env.strict.name, spec, { namespaceDefault }));
    expect(r.status).toBe(403);
    expect(r.rule).toContain(`${field}${says}`);
    expect(r.rule).toContain(env.strict.name);
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
    expect(await env.admit(kind, env.strict.name, spec, { namespaceDefault })).toEqual({ allowed: true });
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
    expect(await env.admit('session', env.open.name, spec)).toEqual({ allowed: true });
    expect(await env.admit('pool', env.open.name, spec)).toEqual({ allowed: true });
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
    const r = refusal(await env.admit('session', env.open.name, spec));
    expect(r.status).toBe(403);
    expect(r.rule).toContain(says);
  });

  it('lists what is allowed in the refusal', async () => {
    const r = refusal(await env.admit('session', env.open.name, { tolerations: [{ operator: 'Exists' }] }));
    expect(r.rule).toContain(
      'allowed: {key: sandbox.dev/dedicated, operator: Equal, value: sandboxes, effect: NoSchedule}, ' +
        '{key: gpu, operator: Exists, any effect}.',
    );
  });

  it('a namespace default pool may not name runc even where runc is allowed', async () => {
    expect(await env.admit('pool', env.open.name, { runtimeClassName: 'runc' })).toEqual({ allowed: true });
    const r = refusal(
      await env.admit('pool', env.open.name, { runtimeClassName: 'runc' }, { namespaceDefault: true }),
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
    const r = refusal(await env.admit('pool', env.nodefault.name, {}, { namespaceDefault: true }));
    expect(r.rule).toContain(`spec.namespaceDefault: true is not allowed in namespace ${env.nodefault.name}`);
    expect(await env.admit('pool', env.nodefault.name, {})).toEqual({ allowed: true });
  });
});

describe('pools are checked when their Pod shape changes, not when they scale', () => {
  it('a pool admitted under an older policy still scales; a changed template meets the new policy', async () => {
    const name = 'scales';
    const pool = {
      apiVersion: API_VERSION,
      kind: POOL_KIND,
      metadata: { name, namespace: env.open.name },
      spec: { replicas: 0, template: { runtimeClassName: 'runc' } },
    };
    await custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: env.open.name,
      plural: POOL_PLURAL,
      body: pool,
    });
    // The platform team takes runc away from the namespace (helm upgrade).
    await env.apply({ runtimeClasses: ['gvisor'] });
    await waitFor(
      () => env.admit('session', env.open.name, { runtimeClassName: 'runc' }),
      predicate('runc refused in the open namespace', (o) => !o.allowed),
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    const patch = (p: object): Promise<{ status: number | null; stderr: string }> =>
      kubectl(['patch', 'sandboxpool', name, '-n', env.open.name, '--type=merge', '-p', JSON.stringify(p)]);
    expect(await patch({ spec: { replicas: 2 } })).toMatchObject({ status: 0 });
    const changed = await patch({ spec: { template: { env: [{ name: 'A', value: '1' }] } } });
    expect(changed.status).not.toBe(0);
    expect(changed.stderr).toContain('spec.template.runtimeClassName runc is not allowed');
  });
});

describe('uninstalled and installed again in the same API server', () => {
  // Regression: with the parameters in ConfigMaps (paramKind), the API server stopped its
  // ConfigMap parameter informer for good once no binding named that kind, and the next install
  // refused every create with "no params found" (kubernetes/kubernetes#130887, #133827): seen
  // here when a second test file installed the policy after the first one had removed it.
  it('enforces its rules again at once, never "no params found"', async () => {
    await env.removePolicy();
    await waitFor(
      () => env.admit('session', env.strict.name, { image: 'evil.io/x:1' }),
      predicate('admitted without the policy', (o) => o.allowed),
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    await env.apply();
    const r = refusal(await env.admit('session', env.nodefault.name, { runtimeClassName: 'runc' }));
    expect(r.rule).toContain('spec.runtimeClassName runc is not allowed');
  });
});
