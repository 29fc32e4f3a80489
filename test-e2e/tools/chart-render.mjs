// Rendering the chart for the checks (chart-checks.test.mjs and the topic files it imports): each
// case renders with the pinned helm (`helm template`, HELM=<pinned helm>).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { parseAllDocuments } from 'yaml';

export const repo = join(dirname(fileURLToPath(import.meta.url)), '../..');
export const chart = join(repo, 'charts/sandbox-platform');
const helm = process.env.HELM ?? join(process.env.LOCALKUBE_DIR ?? join(repo, '.localkube'), 'bin/helm');
const KEY = [
  'apiKeys.keys[0].id=check',
  `apiKeys.keys[0].sha256=${'0'.repeat(64)}`,
  'apiKeys.keys[0].namespaces[0]=sandboxes',
];

/** `helm template` with these --set values (and values files); the process result (status, stdout, stderr). */
export function template(sets = [], files = []) {
  const args = ['template', 'rel', chart, '-n', 'sandbox-system', '--kube-version', '1.35.8'];
  for (const s of [...KEY, ...sets]) args.push('--set', s);
  for (const f of files) args.push('-f', f);
  return spawnSync(helm, args, { encoding: 'utf8' });
}

/** The rendered objects (and the raw text), failing the test when helm fails. */
export function render(sets = [], files = []) {
  const res = template(sets, files);
  assert.equal(res.status, 0, `helm template failed:\n${res.stderr}`);
  const objects = parseAllDocuments(res.stdout)
    .map((d) => d.toJS())
    .filter((o) => o && o.kind);
  return {
    text: res.stdout,
    objects,
    find: (kind, name) => objects.find((o) => o.kind === kind && (!name || o.metadata.name === name)),
  };
}

export const container = (deployment) => deployment.spec.template.spec.containers[0];
export const env = (deployment) =>
  Object.fromEntries((container(deployment).env ?? []).map((e) => [e.name, e.value]));
