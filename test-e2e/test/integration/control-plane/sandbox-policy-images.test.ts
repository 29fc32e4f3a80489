/**
 * The image rule of the chart's sandbox policy (templates/sandbox-policy.yaml, docs/adr/0028) on a
 * real API server: the gateway's former allowlist table (api-gateway's sessions/image-allowlist.ts,
 * removed), the same semantics now in CEL: entries match by whole path segments, never as text
 * prefixes; `repo` any tag or digest, `repo:tag` / `repo@digest` exactly, `path/*` any repository
 * below; images.sandbox always; an invalid reference never. The rest of the policy:
 * sandbox-policy.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { A64, B64, DEFAULT_IMAGE, PolicyEnv, refusal } from './sandbox-policy-env.js';

/** The code interpreter's image (issue 29), allowed by the chart's default policy.images without a tag. */
const PYTHON_IMAGE = 'localhost/sandbox-platform/sandbox-python';

let env: PolicyEnv;

beforeAll(async () => {
  env = await PolicyEnv.install('it-images');
});

afterAll(async () => {
  await env?.uninstall();
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
    const o = await env.admit('session', env.open.name, { image });
    expect(o.allowed).toBe(allowed);
    if (!o.allowed) {
      expect(o.status).toBe(403);
      expect(refusal(o).rule).toContain(`spec.image ${image}`);
      expect(refusal(o).rule).toContain(`policy.namespaces.${env.open.name}.images`);
    }
  });

  it('names an image that is no valid reference as such', async () => {
    const r = refusal(await env.admit('session', env.open.name, { image: 'registry.example.com/team/A' }));
    expect(r.rule).toContain('(not a valid image reference');
  });

  it('the chart defaults allow the default image and the code interpreter image only, and say so', async () => {
    expect(await env.admit('session', env.strict.name, { image: DEFAULT_IMAGE })).toEqual({ allowed: true });
    expect(await env.admit('session', env.strict.name, { image: `${PYTHON_IMAGE}:dev` })).toEqual({
      allowed: true,
    });
    const r = refusal(await env.admit('session', env.strict.name, { image: 'evil.io/x:1' }));
    expect(r.status).toBe(403);
    expect(r.rule).toBe(
      `spec.image evil.io/x:1 is not allowed in namespace ${env.strict.name} by the platform's image policy ` +
        `(chart value policy.images / policy.namespaces.${env.strict.name}.images, Helm release ${env.release} in ${env.rel.name}); ` +
        `allowed: ${DEFAULT_IMAGE}, ${PYTHON_IMAGE} (an entry without tag allows any tag of that repository, path/* any repository ` +
        'below path). Leave spec.image unset for the default image, or ask the platform team to allow this one.',
    );
    expect(r.full).toMatch(
      new RegExp(`ValidatingAdmissionPolicy '${env.policy}' with binding '${env.policy}' denied request: `),
    );
  });
});
