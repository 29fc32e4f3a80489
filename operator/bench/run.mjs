// Builds bench/operator-bench.ts into one ESM file with esbuild and runs it, passing the arguments
// through. The shared API package resolves to its sources; the operator itself runs from
// operator/dist (the bench builds it with tsc -b, as the integration tests do).
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { build } from 'esbuild';

const here = dirname(fileURLToPath(import.meta.url));
// In the repository's node_modules/.cache (ignored), exactly three levels below the root: the
// bundle's external packages resolve from node_modules, and the test framework's REPO_ROOT
// (three levels up from its module) still points at the repository root.
const cache = join(here, '../../node_modules/.cache');
mkdirSync(cache, { recursive: true });
const out = mkdtempSync(join(cache, 'operator-bench-'));
const outfile = join(out, 'operator-bench.mjs');
try {
  await build({
    entryPoints: [join(here, 'operator-bench.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile,
    logLevel: 'warning',
    packages: 'external',
    alias: { '@sandbox-platform/api': join(here, '../../crds/src/index.ts') },
  });
  const result = spawnSync(process.execPath, [outfile, ...process.argv.slice(2)], { stdio: 'inherit' });
  process.exitCode = result.status ?? 1;
} finally {
  rmSync(out, { recursive: true, force: true });
}
