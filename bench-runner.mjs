// The launcher of every package's benchmark (<pkg>/bench/run.mjs): builds the benchmark's
// TypeScript entry into one ESM file with esbuild (no prior `tsc -b` needed; the shared API and
// test-support packages resolve to their sources) and runs it with node, passing the arguments
// through. The exit code is the benchmark's; the bundle is removed afterwards. BENCH_NODE_ARGS adds node options to
// the benchmark's process, e.g. BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" for a profile.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';

import { build } from 'esbuild';

const api = join(import.meta.dirname, 'crds/src/index.ts');
const testSupport = join(import.meta.dirname, 'test-support/src/index.ts');

/**
 * @param {string} entry absolute path of the benchmark's .ts entry
 * @param {{ dir?: string, external?: boolean, args?: string[] }} [opts] `dir`: where the bundle's
 *   temp directory is made (default: the OS temp dir); `external`: leave the packages of
 *   node_modules out of the bundle, so they resolve from the node_modules above `dir`; `args`:
 *   the benchmark's arguments (default: this process's)
 * @returns {Promise<void>} sets process.exitCode to the benchmark's exit status
 */
export async function runBench(
  entry,
  { dir = tmpdir(), external = false, args = process.argv.slice(2) } = {},
) {
  const name = basename(entry, '.ts');
  mkdirSync(dir, { recursive: true });
  const out = mkdtempSync(join(dir, `${name}-`));
  const outfile = join(out, `${name}.mjs`);
  try {
    await build({
      entryPoints: [entry],
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      outfile,
      logLevel: 'warning',
      ...(external ? { packages: 'external' } : {}),
      alias: { '@sandbox-platform/api': api, '@sandbox-platform/test-support': testSupport },
    });
    const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
    const result = spawnSync(process.execPath, [...nodeArgs, outfile, ...args], { stdio: 'inherit' });
    process.exitCode = result.status ?? 1;
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}
