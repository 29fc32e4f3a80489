/**
 * The chart's ValidatingAdmissionPolicy on a real API server, driven with kubectl as a user would:
 * a SandboxSession applied in a namespace the release serves is created; one applied anywhere
 * else is refused with a message naming the namespace and the chart value that serves it. Sessions
 * that already exist in an unserved namespace can still be changed and deleted. The policy
 * objects are rendered by the pinned helm (`make tools`) from the chart, exactly as installed.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import {
  createTestNamespace,
  kubeClients,
  kubectl,
  predicate,
  REPO_ROOT,
  waitFor,
  type TestNamespace,
} from '../../../src/framework/index.js';

const RELEASE = 'it-admission';
const POLICY = `${RELEASE}-sandbox-platform-served-namespaces`;

function helmBinary(): string {
  const helm =
    process.env.HELM ?? join(process.env.LOCALKUBE_DIR ?? join(REPO_ROOT, '.localkube'), 'bin/helm');
  if (!existsSync(helm)) throw new Error(`${helm} does not exist: run \`make tools\` (the pinned helm)`);
  return helm;
}

/** The chart's admission policy and binding for these sandbox namespaces, as YAML. */
function renderPolicy(served: readonly string[]): string {
  const sets = [
    `sandboxNamespaces={${served.join(',')}}`,
    'apiKeys.keys[0].id=it',
    `apiKeys.keys[0].sha256=${'0'.repeat(64)}`,
    `apiKeys.keys[0].namespaces[0]=${served[0] ?? ''}`,
  ];
  const args = ['template', RELEASE, join(REPO_ROOT, 'charts/sandbox-platform'), '-n', 'sandbox-system'];
  args.push('--kube-version', '1.35.8', '--show-only', 'templates/admission-policy.yaml');
  for (const s of sets) args.push('--set', s);
  const res = spawnSync(helmBinary(), args, { encoding: 'utf8' });
  if (res.status !== 0) throw new Error(`helm template failed:\n${res.stderr}`);
  return res.stdout;
}

function sessionYaml(name: string): string {
  return `apiVersion: sandbox.dev/v1alpha1\nkind: SandboxSession\nmetadata:\n  name: ${name}\nspec:\n  idleTimeoutSeconds: 900\n`;
}

describe('SandboxSessions in namespaces the release does not serve', () => {
  const { core } = kubeClients();
  let served: TestNamespace;
  let unserved: TestNamespace;

  beforeAll(async () => {
    [served, unserved] = await Promise.all([
      createTestNamespace(core, { prefix: 'served' }),
      createTestNamespace(core, { prefix: 'unserved' }),
    ]);
    // Created before the policy: what a namespace dropped from sandboxNamespaces still holds.
    const before = await kubectl(['apply', '-n', unserved.name, '-f', '-'], { input: sessionYaml('before') });
    expect(before.stderr).toBe('');
    const applied = await kubectl(['apply', '-f', '-'], { input: renderPolicy([served.name]) });
    expect(applied.status).toBe(0);
    // The API server compiles the policy and syncs the binding within moments: wait for the
    // first refusal (a server-side dry run goes through admission and stores nothing).
    await waitFor(
      () =>
        kubectl(['apply', '--dry-run=server', '-n', unserved.name, '-f', '-'], {
          input: sessionYaml('probe'),
        }),
      predicate('policy in force', (r) => r.status !== 0 && r.stderr.includes(POLICY)),
      { timeoutMs: 30_000, intervalMs: 500 },
    );
  });

  afterAll(async () => {
    // Cluster-scoped: remove it before the other suites of this control plane create sessions.
    await kubectl(['delete', '--ignore-not-found', 'validatingadmissionpolicybinding', POLICY]);
    await kubectl(['delete', '--ignore-not-found', 'validatingadmissionpolicy', POLICY]);
    await Promise.all([served?.cleanup(), unserved?.cleanup()]);
  });

  it('kubectl apply in a served namespace creates the session', async () => {
    const res = await kubectl(['apply', '-n', served.name, '-f', '-'], { input: sessionYaml('demo') });
    expect(res).toMatchObject({ status: 0, stderr: '' });
    expect(res.stdout).toContain('sandboxsession.sandbox.dev/demo created');
  });

  it('kubectl apply in an unserved namespace is refused, saying how to serve the namespace', async () => {
    const res = await kubectl(['apply', '-n', unserved.name, '-f', '-'], { input: sessionYaml('demo') });
    expect(res.status).not.toBe(0);
    expect(res.stderr).toContain(`ValidatingAdmissionPolicy '${POLICY}'`);
    expect(res.stderr).toContain(`namespace ${unserved.name} is not served by the sandbox platform`);
    expect(res.stderr).toContain(`which serves: ${served.name}`);
    expect(res.stderr).toContain('add it to the chart value sandboxNamespaces');
    const get = await kubectl(['get', '-n', unserved.name, 'sandboxsession', 'demo']);
    expect(get.stderr).toContain('NotFound');
    console.log(`refusal as kubectl shows it:\n${res.stderr}`);
  });

  it('a session that existed before can still be changed and deleted', async () => {
    const annotate = await kubectl([
      'annotate',
      '-n',
      unserved.name,
      'sandboxsession',
      'before',
      'note=kept',
    ]);
    expect(annotate).toMatchObject({ status: 0 });
    const del = await kubectl(['delete', '-n', unserved.name, 'sandboxsession', 'before']);
    expect(del).toMatchObject({ status: 0 });
  });
});
