/**
 * The interactive benchmark's gateway as it was at another commit, for before/after figures of a
 * change to the stream path in one run (interactive.bench.ts --baseline <commit>): the sources of
 * api-gateway, crds/src and sandbox-agent/src at that commit are extracted with `git archive`
 * (read-only: no worktree, no checkout), this tree's bench files are laid over that tree's
 * api-gateway/bench (so the old gateway code is served by this bench's own `--serve gateway` role,
 * with the same configuration), bundled with esbuild next to this package's node_modules, and
 * started as a child process. Only the gateway's code differs between the two modes.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';

import { build } from 'esbuild';

import { repoRoot } from './baseline.js';

/** A bundle of this bench over the gateway sources of `commit`, and how to remove it. */
export async function baselineBundle(
  commit: string,
): Promise<{ bundle: string; commit: string; remove(): void }> {
  const root = repoRoot();
  const full = execFileSync('git', ['-C', root, 'rev-parse', '--verify', `${commit}^{commit}`])
    .toString()
    .trim();
  // Under api-gateway/node_modules, so the bundle's bare imports resolve from it.
  const cache = join(root, 'api-gateway/node_modules/.cache');
  mkdirSync(cache, { recursive: true });
  const dir = mkdtempSync(join(cache, 'interactive-baseline-'));
  try {
    const src = join(dir, 'src');
    mkdirSync(src);
    const archive = execFileSync(
      'git',
      ['-C', root, 'archive', full, 'api-gateway/src', 'crds/src', 'sandbox-agent/src'],
      { maxBuffer: 256 << 20 },
    );
    execFileSync('tar', ['-x', '-C', src], { input: archive });
    cpSync(join(root, 'api-gateway/bench'), join(src, 'api-gateway/bench'), { recursive: true });
    const bundle = join(dir, 'interactive-baseline.mjs');
    await build({
      entryPoints: [join(src, 'api-gateway/bench/interactive.bench.ts')],
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      outfile: bundle,
      logLevel: 'warning',
      packages: 'external',
      alias: { '@sandbox-platform/api': join(src, 'crds/src/index.ts') },
    });
    return { bundle, commit: full.slice(0, 12), remove: () => rmSync(dir, { recursive: true, force: true }) };
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}
