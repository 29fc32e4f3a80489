/**
 * Renders templates of the chart with the pinned helm (`make tools`), exactly as `helm install`
 * would, for integration tests that apply chart objects to a real API server.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { REPO_ROOT } from '../../../src/framework/index.js';

/** The pinned helm: $HELM, else <LOCALKUBE_DIR or .localkube>/bin/helm. */
export function helmBinary(): string {
  const helm =
    process.env.HELM ?? join(process.env.LOCALKUBE_DIR ?? join(REPO_ROOT, '.localkube'), 'bin/helm');
  if (!existsSync(helm)) throw new Error(`${helm} does not exist: run \`make tools\` (the pinned helm)`);
  return helm;
}

/** What to render. */
export interface RenderOptions {
  release: string;
  /** The release namespace. */
  namespace: string;
  /** Chart values (written to a values file: keys with dots or list items need no --set escaping). */
  values: Record<string, unknown>;
  /** Templates to render, e.g. templates/sandbox-policy.yaml. */
  showOnly: string[];
}

/** `helm template` of the chart; throws with helm's stderr when the render fails. */
export function renderChart(o: RenderOptions): string {
  const dir = mkdtempSync(join(tmpdir(), 'chart-values-'));
  try {
    const file = join(dir, 'values.json');
    writeFileSync(file, JSON.stringify(o.values));
    const args = ['template', o.release, join(REPO_ROOT, 'charts/sandbox-platform'), '-n', o.namespace];
    args.push('--kube-version', '1.35.8', '-f', file);
    for (const t of o.showOnly) args.push('--show-only', t);
    const res = spawnSync(helmBinary(), args, { encoding: 'utf8' });
    if (res.status !== 0) throw new Error(`helm template failed:\n${res.stderr}`);
    return res.stdout;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** One API key for the render (the chart requires one), allowed in `namespace`. */
export function renderKey(namespace: string): Record<string, unknown> {
  return { keys: [{ id: 'it', sha256: '0'.repeat(64), namespaces: [namespace] }] };
}
